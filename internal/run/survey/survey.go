// Package survey runs v6lab survey: "who connects faster?" over a list
// of sites. It streams the list (never holding it), and for each site of
// its segment looks up A and AAAA, finds the site's page over each family
// (redirects followed, pinned to the family), then times interleaved,
// family-pinned page transactions (the http protocol's, through the
// protocol list) and fetches the page's objects on other hosts over each
// family. Every site's samples and its record (result.Site) are written
// together, sites in list order, so a killed survey resumes after its last
// site and segments merge exactly (run/merge). Politeness is built in: a
// User-Agent naming v6lab and the operator, a pace of connections over
// every site, a bound on connections to one site, an exclusion list, and a
// timeout on every request. report/sites judges the sites.
//
// It imports the protocol list, never a protocol, and nothing of the CLI.
package survey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/report/sites"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/run/host"
	"v6lab/internal/sock/path"
)

// Job is one survey to run (or to resume).
type Job struct {
	Spec *Spec
	// Results receives the result directory.
	Results string
	// Segment and StartAt split the list across client hosts: this
	// process surveys the sites i with i mod Count = Index, starting at
	// StartAt.
	Segment *result.Segment
	StartAt time.Time
	// Resume continues the interrupted survey in this result directory.
	Resume string
	// Lab names the lab of sites measured (no contact needed there);
	// Servers describe its servers for the header.
	Lab     string
	Servers map[string]string
	Notes   []string
	Command []string
	// ToolVersion is recorded and sent in the User-Agent.
	ToolVersion string
	Out, Err    io.Writer
	Quiet       bool
}

// InterruptedError is a survey stopped before its list's end: every
// finished site is on disk.
type InterruptedError struct{ Dir string }

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("survey: interrupted; every finished site is in %s: continue with v6lab survey --resume %s", e.Dir, e.Dir)
}

// ErrInsecure: --insecure is for a lab of sites, whose certificate is
// self-signed; real sites' certificates are always checked.
var ErrInsecure = errors.New("survey: --insecure (insecure: in a file) accepts any certificate, so it is for a lab of sites only (--lab-sites FILE or --lab NAME, which set it): real sites' certificates are always checked")

// ErrNoContact is a survey of real sites without the operator's contact.
var ErrNoContact = errors.New("survey: give --contact URL-OR-MAIL (contact: in a file): every request's User-Agent names v6lab and how site operators reach you; only a lab of sites needs none")

// Run runs the survey and renders its reports; it returns the result
// directory (kept in every case it was made).
func Run(ctx context.Context, j Job) (string, error) {
	sp := j.Spec
	list, m, err := j.prepare()
	if err != nil {
		return "", &InputError{err}
	}
	dir, f, w, after, err := j.open()
	if err != nil {
		return dir, err
	}
	if !j.StartAt.IsZero() && time.Until(j.StartAt) > 0 && !j.Quiet {
		fmt.Fprintf(j.Err, "v6lab: survey %s: waiting until %s (--start-at; in %v)\n", sp.Name, j.StartAt.UTC().Format(time.RFC3339), time.Until(j.StartAt).Round(time.Second))
	}
	if !j.StartAt.IsZero() && !waitUntil(ctx, j.StartAt) {
		w.Close()
		f.Close()
		return dir, &InterruptedError{Dir: dir}
	}
	if !j.Quiet {
		fmt.Fprintf(j.Err, "v6lab: survey %s: %s of %s%s -> %s\n", sp.Name, plural(j.expected(list.Sites), "site"), sp.Sites, j.segmentText(), dir)
	}
	runErr := j.survey(ctx, list, m, w, after)
	werr := w.Close()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if runErr == nil {
		runErr = werr
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return dir, runErr
	}
	if err := j.report(dir); err != nil {
		return dir, err
	}
	if runErr != nil {
		return dir, &InterruptedError{Dir: dir}
	}
	return dir, m.tally.noAnswer(m.dns)
}

// LabKey is the header's lab entry of a survey of a lab of sites: "lab:NAME"
// (a kept lab's, --lab) or "sites:FILE" (its own, --lab-sites), so that
// --resume can ask for the same again.
const LabKey = "survey_lab"

// InputError is a survey refused before it began: its options, its list,
// its exclusion list or its resolvers.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// prepare checks the options, reads the list (the one a resumed survey
// began with) and readies the measurer.
func (j *Job) prepare() (*List, *measurer, error) {
	sp := j.Spec
	if err := sp.Options.Check(); err != nil {
		return nil, nil, err
	}
	if sp.Contact == "" && j.Lab == "" {
		return nil, nil, ErrNoContact
	}
	if sp.Insecure && j.Lab == "" {
		return nil, nil, ErrInsecure
	}
	list, err := OpenList(sp.Sites, !sp.SkipInvalid)
	if err != nil {
		return nil, nil, err
	}
	if sp.SitesSHA256 != "" && (sp.SitesSHA256 != list.SHA256 || sp.SitesCount != list.Sites) {
		return nil, nil, fmt.Errorf("survey: %s is not the list the survey began with (%d sites, sha256 %.12s…; it has %d, %.12s…)", sp.Sites, sp.SitesCount, sp.SitesSHA256, list.Sites, list.SHA256)
	}
	sp.SitesCount, sp.SitesSHA256 = list.Sites, list.SHA256
	m, err := j.measurer()
	return list, m, err
}

// DryRun checks a survey as Run does (options, list, exclusion list,
// resolvers) and says what it would do, sending nothing.
func DryRun(j Job) error {
	list, m, err := j.prepare()
	if err != nil {
		return &InputError{err}
	}
	o := &j.Spec.Options
	fmt.Fprintf(j.Out, "survey %s: %d of the %s of %s%s\n", j.Spec.Name, j.expected(list.Sites), plural(list.Sites, "site"), list.Name, j.segmentText())
	if !j.StartAt.IsZero() {
		fmt.Fprintf(j.Out, "starts at %s (--start-at; in %v)\n", j.StartAt.UTC().Format(time.RFC3339), max(0, time.Until(j.StartAt)).Round(time.Second))
	}
	fmt.Fprintf(j.Out, "each site: A and AAAA asked of %v; %s://NAME/ fetched %s per family, interleaved (%d warm-up); at most %s on other hosts over each family\n",
		m.dns, o.Scheme, plural(o.Runs, "time"), o.Warmup, plural(o.MaxObjects, "object"))
	fmt.Fprintf(j.Out, "politeness: User-Agent %q; at most %s to a site, %s a second over all; %s excluded; every request within %v\n",
		m.userAgent, plural(o.SiteConns, "connection"), plural(o.Rate, "connection"), plural(len(m.exclude), "name"), o.Timeout)
	return nil
}

// expected is how many of n sites this process surveys.
func (j *Job) expected(n int) int {
	if g := j.Segment; g != nil {
		return (n - g.Index + g.Count - 1) / g.Count
	}
	return n
}

func (j *Job) segmentText() string {
	if g := j.Segment; g != nil {
		return fmt.Sprintf(" (segment %s: every site i with i mod %d = %d)", g, g.Count, g.Index)
	}
	return ""
}

// report renders the result's reports and prints them.
func (j *Job) report(dir string) error {
	s, err := sites.WriteAll(dir)
	if err != nil {
		return err
	}
	if !j.Quiet {
		if err := sites.Text(j.Out, s); err != nil {
			return err
		}
		fmt.Fprintln(j.Out)
	}
	fmt.Fprintf(j.Out, "results: %s (samples.jsonl.zst, summary.json, report.txt, results.csv, report.html)\n", dir)
	return nil
}

// measurer readies what measures a site: resolvers, the families their
// lookups travel over, the exclusion list, the pace.
func (j *Job) measurer() (*measurer, error) {
	o := &j.Spec.Options
	x, err := ReadExclusion(o.Exclude)
	if err != nil {
		return nil, err
	}
	var dns []netip.AddrPort
	for _, s := range o.DNSServers {
		ap, err := path.ParseServer(s)
		if err != nil {
			return nil, fmt.Errorf("survey: dns_servers: %w", err)
		}
		dns = append(dns, ap)
	}
	var stub path.Stub
	if len(dns) == 0 {
		rc, err := path.SystemResolvConf()
		if dns, stub = rc.Servers, rc.Stub; err != nil || len(dns) == 0 {
			return nil, fmt.Errorf("survey: no DNS server: /etc/resolv.conf names none (%v); give --dns-server", err)
		}
	}
	over, err := lookupsOver(o.DNSOver, dns)
	if err != nil {
		return nil, err
	}
	return &measurer{o: o, userAgent: o.UserAgent(j.ToolVersion), dns: dns, stub: stub, over: over, exclude: x, pacer: newPacer(o.Rate), warn: j.Err}, nil
}

// lookupsOver is, per family, the family its lookups travel over.
func lookupsOver(over string, dns []netip.AddrPort) (map[path.Path]path.Path, error) {
	has := map[path.Path]bool{}
	for _, s := range dns {
		has[path.OfAddr(s.Addr())] = true
	}
	out := map[path.Path]path.Path{}
	for _, p := range Families {
		switch {
		case over == "ipv4" || over == "ipv6":
			out[p] = path.Path(over)
		case over == "auto" && !has[p]:
			out[p] = Families[0]
			if !has[Families[0]] {
				out[p] = Families[1]
			}
		}
		if want := out[p]; (want == "" && !has[p]) || (want != "" && !has[want]) {
			return nil, fmt.Errorf("survey: dns_over %s: no %s DNS server among %v", over, path.Path(orPath(want, p)).Family(), dns)
		}
	}
	return out, nil
}

func orPath(a, b path.Path) path.Path {
	if a != "" {
		return a
	}
	return b
}

// open makes the result directory and its header, or reopens an
// interrupted one (cut back to its last site); after is the index of the
// last site already there (-1: none).
func (j *Job) open() (dir string, f *os.File, w *result.Writer, after int, err error) {
	if j.Resume != "" {
		after, err := resumePoint(j.Resume)
		if err != nil {
			return j.Resume, nil, nil, 0, err
		}
		stale, err := result.RemoveStaleExport(j.Resume)
		if err != nil {
			return j.Resume, nil, nil, 0, fmt.Errorf("survey: resume: %w", err)
		}
		if stale != "" && !j.Quiet && j.Err != nil {
			fmt.Fprintf(j.Err, "v6lab: %s\n", result.StaleExportNote(stale, j.Resume))
		}
		f, w, err := result.AppendSamples(j.Resume)
		return j.Resume, f, w, after, err
	}
	name := j.Spec.Name
	if j.Segment != nil {
		name = fmt.Sprintf("%s-seg%d", name, j.Segment.Index)
	}
	if dir, err = result.NewDir(j.Results, name, time.Now()); err != nil {
		return "", nil, nil, 0, err
	}
	if f, w, err = result.CreateSamples(dir); err != nil {
		return dir, nil, nil, 0, err
	}
	w.Header(j.header())
	return dir, f, w, -1, w.Sync()
}

// header is the result's header: the machine, the survey's spec, where.
func (j *Job) header() result.Header {
	command := j.Command
	if len(command) == 0 {
		command = os.Args
	}
	notes := append([]string(nil), j.Notes...)
	notes = append(notes, fmt.Sprintf("a site's page transactions are v6lab's http probe's (lookup of the family's record type, a connection pinned to it, the page and its objects on its own host); the families alternate run by run; the first %d run(s) per family are warm-up", j.Spec.Warmup))
	if j.Segment != nil {
		notes = append(notes, fmt.Sprintf("segment %s: this process surveyed the sites i with i mod %d = %d; merge every segment's directory with v6lab merge", j.Segment, j.Segment.Count, j.Segment.Index))
	}
	h := result.Header{Tool: "v6lab", ToolVersion: j.ToolVersion, Name: j.Spec.Name, Created: time.Now().UTC(), Command: command,
		Host: host.Name(), Kernel: host.Kernel(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		Target: result.Sites, Baseline: string(path.IPv4), Spec: j.Spec, Notes: notes, Servers: j.Servers}
	if j.Lab != "" {
		h.Lab = map[string]string{LabKey: j.Lab}
	}
	if j.Segment != nil {
		seg := *j.Segment
		seg.Host, seg.Clock, seg.StartAt = host.Name(), host.Clock(), j.StartAt.UTC()
		if j.StartAt.IsZero() {
			seg.StartAt = time.Time{}
		}
		h.Segment = &seg
	}
	return h
}

// waitUntil waits for t, or returns false when ctx ends first.
func waitUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// job is one site handed to a worker, seq its place in this process's
// order.
type job struct {
	seq int
	e   Entry
}

type done struct {
	seq int
	b   block
	ok  bool
}

// survey measures the sites of the list in this segment after index
// after: Parallel workers, their blocks written in the list's order (a
// window of blocks held while an earlier site is still measured).
func (j *Job) survey(parent context.Context, list *List, m *measurer, w *result.Writer, after int) error {
	o := &j.Spec.Options
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	window := make(chan struct{}, 16*o.Parallel+16)
	jobs := make(chan job)
	results := make(chan done)
	var listErr error
	go func() {
		defer close(jobs)
		seq := 0
		listErr = list.Each(func(e Entry) bool {
			if e.Index <= after || (j.Segment != nil && e.Index%j.Segment.Count != j.Segment.Index) {
				return true
			}
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			jobs <- job{seq, e}
			seq++
			return true
		})
	}()
	var wg sync.WaitGroup
	for range o.Parallel {
		wg.Go(func() {
			for jb := range jobs {
				b := m.site(ctx, jb.e)
				results <- done{jb.seq, b, ctx.Err() == nil}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	prog := j.progress(list.Sites)
	err := writeInOrder(results, window, w, prog, cancel)
	if listErr != nil {
		return listErr
	}
	if err == nil && parent.Err() != nil {
		err = parent.Err()
	}
	return err
}

// writeInOrder writes each finished site's block in order, and stops
// writing at the first site the interruption cut short (the file then
// ends with whole sites only); stop ends the survey on a write error.
func writeInOrder(results <-chan done, window <-chan struct{}, w *result.Writer, prog, stop func()) error {
	held := map[int]done{}
	next, stopped := 0, false
	var err error
	for d := range results {
		if stopped || err != nil {
			continue // drain what the workers still finish
		}
		held[d.seq] = d
		for h, ok := held[next]; ok; h, ok = held[next] {
			delete(held, next)
			if !h.ok {
				stopped = true
				break
			}
			for _, s := range h.b.samples {
				w.Sample(s)
			}
			w.Site(h.b.site)
			<-window
			next++
			prog()
			if err = w.Sync(); err != nil {
				stop()
				break
			}
		}
	}
	return err
}

// progressEvery is how often progress says how far the survey is.
var progressEvery = 10 * time.Second

// progress is a line on Err every progressEvery (unless quiet), saying it
// is progress; none after the last site, which the survey's own report
// follows.
func (j *Job) progress(total int) func() {
	if j.Quiet {
		return func() {}
	}
	var n atomic.Int64
	last := time.Now()
	start := last
	want := j.expected(total)
	return func() {
		c := n.Add(1)
		if time.Since(last) >= progressEvery && int(c) < want { // the last site's is the survey's own report
			last = time.Now()
			fmt.Fprintf(j.Err, "v6lab: survey: in progress, %d of %d sites done so far (%s in)\n", c, want, time.Since(start).Round(time.Second))
		}
	}
}

// plural is "1 site", "2 sites".
func plural(n int, what string) string { return stats.Count(n, what) }
