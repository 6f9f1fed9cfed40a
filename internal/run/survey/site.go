package survey

import (
	"context"
	"errors"
	"fmt"
	mdns "github.com/miekg/dns"
	"io"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/report/sites"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Families are the paths a survey compares, baseline first.
var Families = []path.Path{path.IPv4, path.IPv6}

// block is one site's lines: its samples and its record, written together.
type block struct {
	samples []result.Sample
	site    result.Site
}

// measurer measures sites, one at a time per call, any number at once.
type measurer struct {
	o         *Options
	userAgent string
	dns       []netip.AddrPort
	// stub is how a lost query is sent again: /etc/resolv.conf's options
	// when dns are its servers, else v6lab's own schedule.
	stub path.Stub
	// over is, per family, the family its lookups travel over ("": its own).
	over    map[path.Path]path.Path
	exclude Exclusion
	pacer   *pacer
	tally   lookupTally
	// stalls makes what reads a pair's stall (nil: newStallMeter).
	stalls func() stallSource
	// warn takes the survey's warnings (nil: none); notOffered warns once
	// of a forced HTTP version a site's discovery found offered over
	// neither family.
	warn       io.Writer
	notOffered sync.Once
}

// lookupTally counts the survey's A and AAAA lookups and those that got no
// answer, and keeps the first failure's error.
type lookupTally struct {
	mu            sync.Mutex
	asked, failed int
	first         string
}

func (t *lookupTally) add(lk result.Lookup) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.asked++
	if lk.Failed {
		t.failed++
		if t.first == "" {
			t.first = lk.Type + ": " + lk.Err
		}
	}
}

// noAnswer is an error when lookups were asked and none was answered.
func (t *lookupTally) noAnswer(servers []netip.AddrPort) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.asked == 0 || t.failed < t.asked {
		return nil
	}
	return fmt.Errorf("%w: none of the survey's %d lookups was answered by %v, so no site could be looked up (every site is lookup_failed; first: %s): check --dns-server (dns_servers:) and that the server is up", ErrNoDNSAnswer, t.asked, servers, t.first)
}

// ErrNoDNSAnswer: the survey's DNS servers answered none of its lookups.
var ErrNoDNSAnswer = errors.New("survey: the DNS server never answered")

// site measures one site of the list: nothing for a bad or excluded
// entry; else its lookups, each family's discovery, the interleaved page
// transactions and its objects on other hosts.
func (m *measurer) site(ctx context.Context, e Entry) (b block) {
	b = block{site: result.Site{Index: e.Index, Line: e.Line, Name: e.Name, Start: time.Now().UTC()}}
	// Named, so that the end is set on what is returned.
	defer func() { b.site.End = time.Now().UTC() }()
	switch {
	case e.Bad != "":
		b.site.Skip = "not a name: " + e.Bad
		return b
	case m.exclude.Excludes(e.Name) != "":
		b.site.Skip = "excluded: the exclusion list names " + m.exclude.Excludes(e.Name)
		return b
	}
	have, failed := m.lookups(ctx, &b.site)
	switch {
	case failed != "":
		b.site.Err = "lookup failed: " + failed
		return b
	case len(have) == 0:
		b.site.Err = "no address: the name has neither an A nor an AAAA record"
		return b
	}
	h3 := m.httpsRecord(ctx, &b.site)
	g := newGate(m.pacer, m.o.SiteConns)
	finds := m.discover(ctx, e.Name, have, g, &b.site)
	for p, f := range finds {
		if h3 && f.final != nil && f.final.Scheme == "https" && !slices.Contains(f.fam.Offers, "h3") {
			f.fam.Offers = append(f.fam.Offers, "h3")
			finds[p] = f
			b.site.Families[slices.IndexFunc(b.site.Families, func(x result.SiteFamily) bool { return x.Path == string(p) })] = f.fam
		}
	}
	measured, u := m.chooseURL(finds, have)
	if u == nil {
		b.site.Err = "no page over any family: " + familyErrors(b.site.Families)
		return b
	}
	b.site.URL = u.String()
	b.site.Version = m.version(u, finds, measured)
	m.warnNotOffered(e.Name, m.forcedNotOffered(u, finds, measured))
	b.samples = m.pages(ctx, e, &b.site, u, finds, measured, g)
	b.site.Objects = m.objects(ctx, finds, measured, g)
	return b
}

// resolver is the survey's resolver for lookups of path p's record type.
func (m *measurer) resolver(p path.Path) path.Resolver {
	return path.Resolver{Servers: m.dns, Over: m.over[p], Stub: m.stub}
}

// lookups asks for the site's A and AAAA records, each timed, and says
// which families have an address, and (failed) the errors of lookups that
// got no answer saying what the DNS holds: only NXDOMAIN, or NOERROR
// without a record of the type, means "no address".
func (m *measurer) lookups(ctx context.Context, s *result.Site) (have []path.Path, failed string) {
	var fails []string
	for _, p := range Families {
		lk := result.Lookup{Type: strings.ToUpper(map[path.Path]string{path.IPv4: "a", path.IPv6: "aaaa"}[p])}
		c, cancel := context.WithTimeout(ctx, time.Duration(m.o.Timeout))
		res := m.resolver(p)
		start := time.Now()
		a, err := res.Lookup(c, s.Name, p)
		cancel()
		lk.NS = int64(time.Since(start))
		switch {
		case err == nil:
			lk.Addrs = []string{a.String()}
			have = append(have, p)
		case errors.Is(err, path.ErrNoAddress) || errors.Is(err, path.ErrNXDomain):
			lk.Err = err.Error()
		default:
			lk.Err, lk.Failed = err.Error(), true
			fails = append(fails, lk.Type+": "+err.Error())
		}
		m.tally.add(lk)
		s.Lookups = append(s.Lookups, lk)
	}
	return have, strings.Join(fails, "; ")
}

// httpsRecord asks the first DNS server for the site's HTTPS record (RFC
// 9460), records it, and says whether it offers h3.
func (m *measurer) httpsRecord(ctx context.Context, s *result.Site) bool {
	lk := result.Lookup{Type: "HTTPS"}
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(s.Name), mdns.TypeHTTPS)
	c := &mdns.Client{Timeout: time.Duration(m.o.Timeout)}
	start := time.Now()
	in, _, err := c.ExchangeContext(ctx, q, m.dns[0].String())
	lk.NS = int64(time.Since(start))
	h3 := false
	switch {
	case err != nil:
		lk.Err = err.Error()
	case in.Rcode != mdns.RcodeSuccess:
		lk.Err = mdns.RcodeToString[in.Rcode]
	}
	if err == nil {
		var data []string
		for _, rr := range in.Answer {
			if h, ok := rr.(*mdns.HTTPS); ok {
				text := strings.TrimPrefix(h.String(), h.Hdr.String())
				data = append(data, text)
				h3 = h3 || strings.Contains(text, "h3")
			}
		}
		lk.Data = strings.Join(data, "; ")
		if len(data) == 0 && lk.Err == "" {
			lk.Err = "NODATA"
		}
	}
	s.Lookups = append(s.Lookups, lk)
	return h3
}

// discover finds the site's page over each family with an address.
func (m *measurer) discover(ctx context.Context, name string, have []path.Path, g *gate, s *result.Site) map[path.Path]found {
	d := &discovery{timeout: time.Duration(m.o.Timeout), insecure: m.o.Insecure, userAgent: m.userAgent,
		redirects: m.o.Redirects, gate: g, exclude: m.exclude}
	start := &url.URL{Scheme: m.o.Scheme, Host: name, Path: "/"}
	if m.o.Port != 0 {
		start.Host = netJoin(name, m.o.Port)
	}
	out := map[path.Path]found{}
	for _, p := range have {
		d.resolver = m.resolver(p)
		f := d.find(ctx, start, p)
		out[p] = f
		s.Families = append(s.Families, f.fam)
	}
	return out
}

func netJoin(host string, port int) string { return host + ":" + strconv.Itoa(port) }

// chooseURL is the page both families are measured at (where the first
// family's redirects ended that found it), and the families measured:
// those with an address whose discovery connected, or that found the page
// (a family that never connected is measured once, to record how it
// fails).
func (m *measurer) chooseURL(finds map[path.Path]found, have []path.Path) ([]path.Path, *url.URL) {
	var u *url.URL
	for _, p := range have {
		if f := finds[p]; f.final != nil && u == nil {
			u = f.final
		}
	}
	return have, u
}

// version is the HTTP version measured: the option's, or with auto the
// highest both families found offered (3, 2, else 1.1).
func (m *measurer) version(u *url.URL, finds map[path.Path]found, measured []path.Path) string {
	if m.o.HTTPVersion != "auto" {
		return m.o.HTTPVersion
	}
	if u.Scheme != "https" {
		return "1.1"
	}
	offered := func(v string) bool {
		for _, p := range measured {
			if f := finds[p]; f.final != nil && !slices.Contains(f.fam.Offers, v) {
				return false
			}
		}
		return true
	}
	switch {
	case offered("h3"):
		return "3"
	case offered("h2"):
		return "2"
	}
	return "1.1"
}

// forcedNotOffered says why the forced --http-version is not one the
// site's discovery found offered, "" when it is (or auto): HTTP/3
// advertised over neither family (no Alt-Svc h3, no HTTPS record), or
// HTTP/2 over plain http (h2c), which has no ALPN to offer it by.
func (m *measurer) forcedNotOffered(u *url.URL, finds map[path.Path]found, measured []path.Path) string {
	switch {
	case m.o.HTTPVersion == "2" && u.Scheme == "http":
		return "--http-version 2 over http is h2c, which discovery cannot find offered (plain-text HTTP has no ALPN), and few sites speak"
	case m.o.HTTPVersion != "3":
		return ""
	}
	for _, p := range measured {
		if slices.Contains(finds[p].fam.Offers, "h3") {
			return ""
		}
	}
	return "--http-version 3 is forced, and discovery found HTTP/3 offered over neither family (no Alt-Svc h3, no HTTPS record)"
}

// warnNotOffered warns, once a survey, of the first site whose forced
// HTTP version was not found offered (why, from forcedNotOffered; ""
// says nothing).
func (m *measurer) warnNotOffered(name, why string) {
	if why == "" || m.warn == nil {
		return
	}
	m.notOffered.Do(func() {
		fmt.Fprintf(m.warn, "v6lab: survey: warning: %s: %s; its page fetches may all fail (time out) over both families, and so may other sites': such a site is failed, its why says so (said once; see results.csv)\n", name, why)
	})
}

// familyErrors joins each family's discovery error.
func familyErrors(fams []result.SiteFamily) string {
	var out []string
	for _, f := range fams {
		out = append(out, f.Path+": "+f.Err)
	}
	return strings.Join(out, "; ")
}

// probe makes an http probe of u over p through the protocol list, with
// the survey's user agent, resolvers and TLS choice; objects: the page's
// objects on its own host too, on its connection.
func (m *measurer) probe(u *url.URL, version string, p path.Path, objects bool) (load.Probe, error) {
	o := all.Web.New()
	set := map[string]string{proto.OptURL: u.String(), "user_agent": m.userAgent, "max_body": "64M"}
	if version != "1.1" {
		set["http_version"] = version
	}
	if !objects {
		set["no_objects"] = "true"
	}
	if m.o.Insecure {
		set["insecure"] = "true"
	}
	if over := m.over[p]; over != "" {
		set["dns_over"] = string(over)
	}
	for k, v := range set {
		if err := proto.Set(o, k, v); err != nil {
			return nil, err
		}
	}
	for _, s := range m.dns {
		if err := proto.Set(o, "dns_servers", s.String()); err != nil {
			return nil, err
		}
	}
	if err := o.Check(result.Hosts, func(k string) bool { _, ok := set[k]; return ok }); err != nil {
		return nil, err
	}
	ep, err := o.Target(p)
	if err != nil {
		return nil, err
	}
	return o.Probe(ep, p)
}

// pages runs the page transactions: runs per family, the families
// interleaved and their order alternating run by run; a family whose
// discovery never connected once.
func (m *measurer) pages(ctx context.Context, e Entry, s *result.Site, u *url.URL, finds map[path.Path]found, measured []path.Path, g *gate) []result.Sample {
	label := all.Web.Name
	if v := s.Version; v == "2" || v == "3" {
		label += "/" + v
	}
	probes := map[path.Path]load.Probe{}
	for _, p := range measured {
		pr, err := m.probe(u, s.Version, p, true)
		if err != nil {
			s.Err = fmt.Sprintf("%s: %v", p, err)
			return nil
		}
		probes[p] = pr
	}
	return m.runs(ctx, e, g, measured, finds, probes, label)
}

// runs runs the site's pairs: Runs of them, and one more in place of each
// counted pair (both completed) sites.Uncounted leaves out for v6lab's own
// stall in it, at most Runs more in all.
func (m *measurer) runs(ctx context.Context, e Entry, g *gate, measured []path.Path, finds map[path.Path]found,
	probes map[path.Path]load.Probe, label string) []result.Sample {
	var st stallSource
	if m.stalls != nil {
		st = m.stalls()
	} else {
		st = newStallMeter()
	}
	var out []result.Sample
	var stalls, longest []float64 // the counted pairs' stalls and longer pages, ms
	for r := 0; r < m.wanted(stalls, longest); r++ {
		pair, stall, ok := m.pair(ctx, g, e, st, r, measured, finds, probes, label)
		out = append(out, pair...)
		if !ok {
			return out
		}
		if len(pair) == 2 && pair[0].OK() && pair[1].OK() && !pair[0].Warmup {
			stalls = append(stalls, float64(stall)/1e6)
			longest = append(longest, float64(max(pair[0].TotalNS, pair[1].TotalNS))/1e6)
		}
	}
	return out
}

// wanted is how many pairs a site runs, given its counted pairs' stalls
// and longer page times so far: Runs, and one more for each that sites.Uncounted leaves out, at
// most 2 × Runs.
func (m *measurer) wanted(stalls, longest []float64) int {
	n := m.o.Runs
	for _, out := range sites.Uncounted(stalls, longest, time.Duration(m.o.Threshold)) {
		if out {
			n++
		}
	}
	return min(n, 2*m.o.Runs)
}

// pair runs one run's transactions, the families in its order (reversed
// on odd runs), and records on each the stall the process went through
// meanwhile (StallMetric); ok is false when the survey was interrupted.
func (m *measurer) pair(ctx context.Context, g *gate, e Entry, st stallSource, r int, measured []path.Path,
	finds map[path.Path]found, probes map[path.Path]load.Probe, label string) (pair []result.Sample, stall time.Duration, ok bool) {
	order := slices.Clone(measured)
	if r%2 == 1 {
		slices.Reverse(order)
	}
	st.start()
	ok = true
	for _, p := range order {
		if r > 0 && !finds[p].fam.Connected && finds[p].final == nil {
			continue
		}
		smp, done := m.transaction(ctx, g, probes[p], e.Index)
		if !done {
			ok = false
			break
		}
		smp.Cell, smp.Protocol, smp.Path, smp.Conns, smp.Run, smp.User = e.Name, label, string(p), 1, r, e.Index
		smp.Warmup = r < m.o.Warmup
		pair = append(pair, smp)
	}
	stall = st.since()
	for i := range pair {
		if pair[i].Metrics == nil {
			pair[i].Metrics = map[string]float64{}
		}
		pair[i].Metrics[sites.StallMetric] = float64(stall) / 1e6
	}
	return pair, stall, ok
}

// transaction runs one transaction of pr through the site's gate, bounded
// by the timeout; false when ctx ended (the survey was interrupted).
func (m *measurer) transaction(ctx context.Context, g *gate, pr load.Probe, user int) (result.Sample, bool) {
	release, err := g.open(ctx)
	if err != nil {
		return result.Sample{}, false
	}
	defer release()
	c, cancel := context.WithTimeout(ctx, time.Duration(m.o.Timeout))
	defer cancel()
	smp := pr.Do(c, user)
	return smp, ctx.Err() == nil
}

// objects fetches the page's objects on other hosts (each once, at most
// max_objects, in the order the families' pages name them) over every
// family measured that reached the site; an object that fails over one
// family only is fetched again over it, so that one lost packet does not
// make a site partly broken.
func (m *measurer) objects(ctx context.Context, finds map[path.Path]found, measured []path.Path, g *gate) []result.SiteObject {
	var urls []*url.URL
	seen := map[string]bool{}
	var over []path.Path
	for _, p := range measured {
		f := finds[p]
		if f.fam.Connected || f.final != nil {
			over = append(over, p)
		}
		for _, u := range f.objects {
			if m.exclude.Excludes(u.Hostname()) != "" {
				continue // never contacted, as the site itself would not be
			}
			if !seen[u.String()] && len(urls) < m.o.MaxObjects {
				seen[u.String()] = true
				urls = append(urls, u)
			}
		}
	}
	out := make([]result.SiteObject, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		out[i] = result.SiteObject{URL: u.String(), Err: map[string]string{}}
		wg.Go(func() { m.object(ctx, &out[i], u, over, g) })
	}
	wg.Wait()
	return out
}

// object fetches one object over each family (again over a family that
// alone failed).
func (m *measurer) object(ctx context.Context, o *result.SiteObject, u *url.URL, over []path.Path, g *gate) {
	fetch := func(p path.Path) string {
		pr, err := m.probe(u, "1.1", p, false)
		if err != nil {
			return err.Error()
		}
		smp, ok := m.transaction(ctx, g, pr, 0)
		if !ok {
			return "interrupted"
		}
		return smp.Err
	}
	for _, p := range over {
		o.Err[string(p)] = fetch(p)
	}
	failed := 0
	for _, p := range over {
		if o.Err[string(p)] != "" {
			failed++
		}
	}
	if failed == 1 && len(over) > 1 {
		for _, p := range over {
			if o.Err[string(p)] != "" {
				o.Err[string(p)] = fetch(p)
			}
		}
	}
}
