// Package experiment reads experiments (files and flags) into cell groups,
// plans their cells × runs in an interleaved order, and executes the plan,
// streaming every sample to a result directory.
//
// It finds protocols in proto/all and imports no protocol package itself;
// it never imports what runs it (measure, inlab, run) or the CLI.
package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/input/specfile"
	"v6lab/internal/input/units"
	"v6lab/internal/lab"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Experiment is what one result directory holds: cells measured in one
// plan, compared against one baseline path.
type Experiment struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Where it runs: auto (the lab when this process may build one, else
	// loopback), lab, loopback, or hosts (real targets named per cell).
	Where result.Where `json:"where"`
	// Topology is a lab topology file (lab and auto only).
	Topology string `json:"topology,omitempty"`
	// topologyLine is the line of the file that named it (0: none).
	topologyLine int
	// Congestion is the lab hosts' TCP congestion control (default cubic).
	Congestion string `json:"congestion,omitempty"`
	// congestionAt is where the file set it (nil: no file did).
	congestionAt *specfile.Error
	// Scaled is the --scale factor the experiment was shrunk by (0: not
	// scaled); see Scale for what it changes.
	Scaled   float64   `json:"scale,omitempty"`
	Servers  string    `json:"servers"`
	Baseline path.Path `json:"baseline"`
	// Order is interleaved (paths in the listed order in every run) or
	// shuffled (a new order of paths for every run, from Seed).
	Order string `json:"order"`
	Seed  int64  `json:"seed,omitempty"`
	// Spin, when set, is the client's spin window (evloop.SetSpin: how
	// long it polls without blocking when one exchange is in flight);
	// nil: the engine's default. Up to MaxSpin.
	Spin *Duration `json:"spin,omitempty"`
	// SampleEvery, above 1, keeps one sample row of every SampleEvery of
	// each run in the samples file; every figure is still of every sample
	// (each run's record holds their totals). CheckSampleEvery says where
	// it may not be used.
	SampleEvery int         `json:"sample_every,omitempty"`
	Groups      []CellGroup `json:"cells"`
}

// CongestionOffLab is the error for the file's congestion key where no
// lab is built (why says why, "--loopback"): it sets the lab's hosts
// alone, and a run elsewhere would measure with this host's own, as
// if the key were not there. nil when no file set it.
func (e *Experiment) CongestionOffLab(why string) error {
	if e.congestionAt == nil {
		return nil
	}
	err := *e.congestionAt
	err.Msg = fmt.Sprintf("%s sets the TCP congestion control of the lab's hosts, but %s: no lab is built, and the run would measure with this host's own as if the key were not there (remove it, or set net.ipv4.tcp_congestion_control here)", e.Congestion, why)
	return &err
}

// CheckSampleEvery says why the experiment may not keep only some sample
// rows, if so: a trial's per-trial tables and intervals, a path MTU
// group's PMTU tables, and a split run's per-segment figures, need every
// row (segmented: it runs as a segment).
func (e *Experiment) CheckSampleEvery(segmented bool) error {
	switch {
	case e.SampleEvery < 0:
		return fmt.Errorf("%d is negative (1 keeps every sample)", e.SampleEvery)
	case e.SampleEvery < 2:
		return nil
	case segmented:
		return fmt.Errorf("%d with --segment: merge's per-segment figures need every sample's row", e.SampleEvery)
	}
	for i := range e.Groups {
		c := &e.Groups[i]
		if c.Opts().Timing() != "" {
			return fmt.Errorf("%d, but cell group %s is not made of transactions (its trials' or downloads' own tables need every row): keep every sample", e.SampleEvery, c.CellName())
		}
		if !c.PMTU.IsZero() {
			return fmt.Errorf("%d, but cell group %s sets path MTU conditions (%s; the PMTU tables count every transaction's row): keep every sample", e.SampleEvery, c.CellName(), c.PMTU)
		}
	}
	return nil
}

// MaxSpin is the longest spin window an experiment may ask for: beyond
// it the spin no longer shortens a wake-up but burns a CPU.
const MaxSpin = 10 * time.Millisecond

// CheckSpin says what is wrong with a spin window, for an error that
// names its field or flag.
func CheckSpin(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%v is negative (0 turns spinning off)", d)
	case d > MaxSpin:
		return fmt.Errorf("%v is more than %v: a reply that late is not worth a spinning CPU (0 turns spinning off)", d, MaxSpin)
	}
	return nil
}

// CellGroup is one cell group of an experiment: a protocol measured over paths
// at connection counts, Runs runs per cell. Its JSON is flat: the
// protocol's options beside the group's own fields (MarshalJSON).
type CellGroup struct {
	// Name is the experiment's name (copied into each cell group).
	Name string `json:"name,omitempty"`
	// Label tells cell groups of one protocol apart (default: Protocol).
	Label    string      `json:"label,omitempty"`
	Protocol string      `json:"protocol"`
	Target   string      `json:"target,omitempty"`
	Paths    []path.Path `json:"paths"`
	Conns    []int       `json:"conns"`
	Runs     int         `json:"runs"`
	// Warmup is how many leading runs per cell are marked warm-up (kept,
	// not counted).
	Warmup   int       `json:"warmup"`
	Timeout  Duration  `json:"timeout"`
	Pause    Duration  `json:"pause"`
	Duration Duration  `json:"duration,omitempty"`
	Baseline path.Path `json:"baseline,omitempty"`
	// Options are the protocol's own, checked by it (proto.Options),
	// recorded flat beside the group's fields.
	Options proto.Options `json:"-"`
	// Server is "real" when the cell measures the real server of its
	// protocol (nginx, unbound, proftpd, postfix, dovecot) in the lab.
	Server string `json:"server,omitempty"`
	// Background is the congestion level (traffic.Levels: C1B…C6B) that
	// runs between the lab's generator hosts during the cell's runs.
	Background string `json:"background,omitempty"`
	// ServerCapture adds, per transaction, the server-side figures of
	// the Towson study from a capture in the server host: delay from the
	// request to the client's last ACK, and throughput (docs/metrics.md).
	ServerCapture bool `json:"server_capture,omitempty"`
	// LinkRate, when set, reshapes every link of the lab to this rate
	// (bits/s) for the cell group's runs (a run condition; the lab's own
	// shaping returns for groups without one).
	LinkRate uint64 `json:"link_rate,omitempty"`
	// linkRateAt is where the file gave LinkRate (nil: no file did).
	linkRateAt *specfile.Error
	// IPv6Loss, when set, drops that share (percent; 100: blackholed) of
	// the client's IPv6 packets at the lab's first router during the cell
	// group's runs (a run condition: a dual-stack client's fallback).
	IPv6Loss float64 `json:"ipv6_loss,omitempty"`
	// IPv6UDPLoss, when set, drops that share (percent; 100: QUIC blocked
	// over IPv6 only) of the client's IPv6 UDP datagrams to any port but
	// DNS's at the same router (a run condition; lab.ImpairIPv6UDP).
	IPv6UDPLoss float64 `json:"ipv6_udp_loss,omitempty"`
	// Loss, when set, drops that share (percent) of every packet between
	// the lab's routers, each way, during the cell group's runs (a run
	// condition: every path alike, in tc BPF).
	Loss float64 `json:"loss,omitempty"`
	// IPv6Delay, when set, holds the IPv6 packets r1 sends the client
	// this long (netem: where the kernel has it) during the cell group's
	// runs: a slow IPv6 path for a dual-stack client.
	IPv6Delay Duration `json:"ipv6_delay,omitempty"`
	// PMTU, when set, is what the lab's routers do to path MTU discovery
	// and fragments, and the mitigations in force, during the cell
	// group's runs, over the lab's own (a run condition).
	PMTU lab.PMTU `json:"pmtu,omitzero"`
	// Params are protocol options, recorded for the reader.
	Params map[string]string `json:"params,omitempty"`
}

// RacesFamilies says whether one of the cell group's paths races the
// families (dual).
func (s *CellGroup) RacesFamilies() bool {
	return slices.ContainsFunc(s.Paths, func(p path.Path) bool { return p.Kind().Dual })
}

// CellName is what results call this cell group: Label, or the protocol.
func (s *CellGroup) CellName() string {
	if s.Label != "" {
		return s.Label
	}
	return s.Protocol
}

// NoteName is what notes call this cell group: its tables' title when
// its options name an HTTP version (a probe's group http of HTTP/2 is
// "HTTP/2", as report.txt titles it), else CellName (result.GroupCalled).
func (s *CellGroup) NoteName() string {
	v, h2c := s.version()
	return result.GroupCalled(s.CellName(), v, h2c)
}

// Title is the cell group's title as the reports' tables have it
// (result.GroupTitle: "HTTP/2", "WEB/2 (h2c)", "DNS").
func (s *CellGroup) Title() string {
	v, h2c := s.version()
	return result.GroupTitle(s.CellName(), v, h2c)
}

// version is the HTTP version the group's options name ("" for none),
// and whether it is HTTP/2 in the clear.
func (s *CellGroup) version() (v string, h2c bool) {
	if o := s.Opts(); o != nil {
		if f, ok := proto.FieldOf(o, versionKey); ok {
			v, h2c = f.Text(), inClear2(o)
		}
	}
	return v, h2c
}

// StepTitle names the cell of a run record as the reports do: its
// group's title, its path and its connections ("HTTP/2 over ipv4, 10
// conns"), for the progress of a run.
func (e *Experiment) StepTitle(r result.Run) string {
	title := strings.ToUpper(r.Protocol)
	for i := range e.Groups {
		if e.Groups[i].CellName() == r.Protocol {
			title = e.Groups[i].Title()
			break
		}
	}
	conns := fmt.Sprintf("%d conns", r.Conns)
	if r.Conns == 1 {
		conns = "1 conn"
	}
	return title + " over " + r.Path + ", " + conns
}

// WireKey names the server a cell's traffic goes to (its key in
// proto.Endpoints and in the wire check's ports): the embedded server that
// answers the cell, or real/KEY for the real server that stands for it
// (real/http: nginx; real/https: nginx's TLS; real/h3: Caddy).
//
// The server follows from all the group's paths (a dialer v3 cell's pinned
// paths use the server its dual path races to), so WireKey derives
// RacesFamilies from them first: a job read back from JSON, or paths a
// flag changed, ask for the server the run started.
func (s *CellGroup) WireKey() string {
	if s.Options != nil {
		s.Options.Base().RacesFamilies = s.RacesFamilies()
	}
	k := all.CellServerKey(s.Protocol, s.Options)
	if s.Server == "real" {
		return "real/" + k
	}
	return k
}

// TCPWire follows a server key whose measured traffic is UDP alone
// (HTTP/3's) in the wire check's key of the runs that go to the same
// port over TCP (WireKeyOn).
const TCPWire = "/tcp"

// WireKeyOn is the wire check's key of the group's runs over path p:
// WireKey, or, over a pinned path of a cell whose server is the HTTP/3
// one but which speaks TCP there (dialer v3 naming no http_version 3:
// HTTP/1.1 or h2 over TLS, to the same port), WireKey+TCPWire, which
// counts that port's TCP.
func (s *CellGroup) WireKeyOn(p path.Path) string {
	k := s.WireKey()
	if p.Kind().Dual || !all.WireUDP(k) || s.pinnedKey() == strings.TrimPrefix(k, "real/") {
		return k
	}
	return k + TCPWire
}

// pinnedKey is the server the group's options ask for as if none of its
// paths raced the families (what a dialer v3 cell's pinned paths speak
// to: https).
func (s *CellGroup) pinnedKey() string {
	b := s.Options.Base()
	races := b.RacesFamilies
	b.RacesFamilies = false
	defer func() { b.RacesFamilies = races }()
	return all.CellServerKey(s.Protocol, s.Options)
}

// anyCell reports whether any cell group satisfies f.
func (e *Experiment) anyCell(f func(*CellGroup) bool) bool {
	return slices.ContainsFunc(e.Groups, func(c CellGroup) bool { return f(&c) })
}

// Real reports whether any cell group measures a real server.
func (e *Experiment) Real() bool {
	return e.anyCell(func(c *CellGroup) bool { return c.Server == "real" })
}

// RealProtocols lists the protocols measured against real servers.
func (e *Experiment) RealProtocols() []string {
	var out []string
	for _, c := range e.Groups {
		if c.Server == "real" && !slices.Contains(out, c.Protocol) {
			out = append(out, c.Protocol)
		}
	}
	return out
}

// RealPaths lists the paths the cell groups measured against real servers
// run over, in first-seen order.
func (e *Experiment) RealPaths() []path.Path {
	var out []path.Path
	for _, c := range e.Groups {
		for _, p := range c.Paths {
			if c.Server == "real" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// RealCells are the options of the cell groups that measure protocol's
// real server.
func (e *Experiment) RealCells(protocol string) []proto.Options {
	var out []proto.Options
	for _, c := range e.Groups {
		if c.Protocol == protocol && c.Server == "real" {
			c.WireKey() // derives what the options ask of the server from the group's paths
			out = append(out, c.Options)
		}
	}
	return out
}

// Background reports whether any cell group runs with background traffic
// (the lab then needs its generator hosts).
func (e *Experiment) Background() bool {
	return e.anyCell(func(c *CellGroup) bool { return c.Background != "" })
}

// LinkRateError is msg said of the group's link_rate where its file gave
// it ("rate.yaml:9: cells[1].link_rate: 10M (cell group slow) …"), else
// of the group by name.
func (c *CellGroup) LinkRateError(msg string) error {
	what := fmt.Sprintf("%s (cell group %s) %s", units.Rate(c.LinkRate), c.CellName(), msg)
	if c.linkRateAt == nil {
		return errors.New("link_rate " + what)
	}
	err := *c.linkRateAt
	err.Msg = what
	return &err
}

// LinkRates reports whether any cell group sets its own link rate.
func (e *Experiment) LinkRates() bool {
	return e.anyCell(func(c *CellGroup) bool { return c.LinkRate > 0 })
}

// ServerCapture reports whether any cell group asks for server-side
// figures.
func (e *Experiment) ServerCapture() bool {
	return e.anyCell(func(c *CellGroup) bool { return c.ServerCapture })
}

// Single wraps one cell group as an experiment (the probe commands).
func Single(s CellGroup, where result.Where) *Experiment {
	return &Experiment{Name: s.Name, Where: where, Servers: "embedded", Baseline: s.Baseline, Order: OrderInterleaved, Groups: []CellGroup{s}}
}

// Orders of paths within a run.
const (
	OrderInterleaved = "interleaved"
	OrderShuffled    = "shuffled"
)

// Duration is a time.Duration that reads and writes as "1.5s".
type Duration time.Duration

// MarshalText writes the duration as Go prints it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "1.5s", "200ms", …
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Validate checks a cell group before anything runs. A bad value is a
// *FieldError, which a command that took the value from a flag names as
// that flag (AsFlag).
func (s *CellGroup) Validate() error {
	if len(s.Paths) == 0 {
		return errors.New("experiment: no paths")
	}
	if i, err := checkConns(s.Conns); err != nil {
		return &FieldError{Field: "conns", Index: i, Err: err}
	}
	for _, r := range []struct {
		field string
		err   error
	}{
		{"runs", checkRuns(s.Runs)},
		{"warmup", checkWarmup(s.Warmup, s.Runs)},
		{"warmup", checkKeptWarmup(s.Warmup, time.Duration(s.Duration), s.Options)},
		{"timeout", checkTimeout(time.Duration(s.Timeout))},
		{"pause", checkPause(time.Duration(s.Pause))},
		{"duration", checkDuration(time.Duration(s.Duration))},
	} {
		if r.err != nil {
			return &FieldError{Field: r.field, Index: -1, Err: r.err}
		}
	}
	for _, p := range s.Paths {
		if err := DualFits(p, s.Protocol); err != nil {
			return &FieldError{Field: "paths", Index: -1, Err: err}
		}
	}
	return nil
}

// FieldError is a cell group's bad value: its field (conns, runs, …) and,
// in a list, the entry's index (-1: the field's).
type FieldError struct {
	Field string
	Index int
	Err   error
}

func (e *FieldError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("experiment: %s[%d]: %v", e.Field, e.Index, e.Err)
	}
	return fmt.Sprintf("experiment: %s: %v", e.Field, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// AsFlag is the error said of the flag that gave the field (--conns: …).
func (e *FieldError) AsFlag() error {
	return fmt.Errorf("--%s: %w", strings.ReplaceAll(e.Field, "_", "-"), e.Err)
}

// FlagError is err said of its flag when it is a *FieldError whose field
// a flag gave (given), else err.
func FlagError(err error, given func(field string) bool) error {
	var fe *FieldError
	if errors.As(err, &fe) && given(fe.Field) {
		return fe.AsFlag()
	}
	return err
}

// DualFits says whether a cell of protocol can use path p: the dual path
// races the families by Happy Eyeballs, which only some protocols' clients
// do (proto.Protocol.Races); which client programs may is the protocol's
// own rule (its options' PathFit).
func DualFits(p path.Path, protocol string) error {
	if !p.Kind().Dual {
		return nil
	}
	if pr, ok := all.Get(protocol); ok && !pr.Races {
		return fmt.Errorf("%s races the families by Happy Eyeballs, which only %s cells do, not %s", p, all.Racing(), protocol)
	}
	return nil
}

// RacingCells names the protocols whose cells race the families on the
// dual path ("http").
func RacingCells() string { return all.Racing() }

// TimingNotes say how the experiment's samples are timed: timing is the
// note for v6lab's own transactions, given when any cell makes them, and
// linger how their connections end, given when one of those is over TCP
// (not a DNS query or an HTTP/3 request over UDP); each cell timed
// otherwise (proto.Timed) adds its own, once.
func (e *Experiment) TimingNotes(timing, linger string) []string {
	var out, own, closing, kept []string
	transactions := false
	for i := range e.Groups {
		c := &e.Groups[i]
		note := c.Opts().Timing()
		switch {
		case note == "":
			transactions = true
			dg, ok := c.Opts().(proto.Datagrams)
			switch {
			case keeps(c.Opts()): // HTTP/3's kept QUIC connections too (trial7 F8)
				kept = append(kept, c.NoteName())
			case ok && dg.OverUDP():
			default:
				closing = append(closing, c.NoteName())
			}
		case !slices.Contains(own, note):
			own = append(own, note)
		}
	}
	if transactions {
		out = append(out, timing)
	}
	if len(closing) > 0 && len(kept) > 0 {
		linger += " (cell groups " + strings.Join(closing, ", ") + ")"
	}
	if len(closing) > 0 {
		out = append(out, linger)
	}
	if len(kept) > 0 {
		out = append(out, KeptNote+" (cell groups "+strings.Join(kept, ", ")+")")
	}
	return append(out, own...)
}

// KeptNote says how kept connections (keepalive) end, in place of the
// linger note.
const KeptNote = "kept connections (keepalive): each user's connection stays open for its next transactions, across runs, and is not closed after the completion marker; a connection the server closed is opened again by the user's next transaction (whose sample is then not kept)"

// Validate checks an experiment before anything runs.
func (e *Experiment) Validate() error {
	if err := CheckName(e.Name); err != nil {
		return fmt.Errorf("experiment: name: %w", err)
	}
	if len(e.Groups) == 0 {
		return errors.New("experiment: no cells")
	}
	if err := e.CheckSampleEvery(false); err != nil {
		return fmt.Errorf("experiment: sample_every: %w", err)
	}
	seen := map[string]bool{}
	for i := range e.Groups {
		c := &e.Groups[i]
		if seen[c.CellName()] {
			return fmt.Errorf("experiment: two cell groups are called %q: give one a label", c.CellName())
		}
		seen[c.CellName()] = true
		if err := c.Validate(); err != nil {
			return fmt.Errorf("%w (cell group %s)", err, c.CellName())
		}
		for _, p := range c.Paths {
			if e.Where.OffLab() {
				if err := p.OffLab(string(e.Where)); err != nil {
					return fmt.Errorf("%w (cell group %s)", &FieldError{Field: "paths", Index: -1, Err: err}, c.CellName())
				}
			}
			if err := c.Opts().PathFit(e.Where, p); err != nil {
				return fmt.Errorf("%w (cell group %s)", &FieldError{Field: "paths", Index: -1, Err: err}, c.CellName())
			}
		}
		if !slices.Contains(c.Paths, e.Baseline) {
			return fmt.Errorf("experiment: cell group %s does not measure the baseline path %s", c.CellName(), e.Baseline)
		}
	}
	return nil
}

// Paths lists every path any cell group measures, in first-seen order.
func (e *Experiment) Paths() []path.Path {
	var out []path.Path
	for _, c := range e.Groups {
		for _, p := range c.Paths {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// Protocols lists the protocols of the cell groups, once each.
func (e *Experiment) Protocols() []string {
	var out []string
	for _, c := range e.Groups {
		if !slices.Contains(out, c.Protocol) {
			out = append(out, c.Protocol)
		}
	}
	return out
}

// Step is one run of one cell in the order they are done.
type Step struct {
	Seq    int
	Group  int // index into Experiment.Cells
	Path   path.Path
	Conns  int
	Run    int
	Warmup bool
	// Rewarm marks the warm-up a resumed experiment runs again before a
	// cell's first counted run (Executor.Done; result.Run.Rewarm).
	Rewarm bool
}

// Plan orders the runs of one cell group: for each connection count, run
// r of every path before run r+1 of any (v4, v6, v4, v6, …), so slow drift
// of the machine hits every path alike and run r of two paths can be
// paired.
func (s *CellGroup) Plan() []Step {
	return (&Experiment{Order: OrderInterleaved, Groups: []CellGroup{*s}}).Plan()
}

// Plan orders every run of the experiment: cell groups one after another,
// each as CellGroup.Plan, with the order of paths in each run shuffled from
// Seed when Order is shuffled.
func (e *Experiment) Plan() []Step {
	var out []Step
	rng := rand.New(rand.NewPCG(uint64(e.Seed), 0x76366c6162))
	for ci := range e.Groups {
		s := &e.Groups[ci]
		for _, n := range s.Conns {
			for r := 0; r < s.Runs; r++ {
				paths := slices.Clone(s.Paths)
				if e.Order == OrderShuffled {
					rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
				}
				for _, p := range paths {
					out = append(out, Step{Seq: len(out), Group: ci, Path: p, Conns: n, Run: r, Warmup: r < s.Warmup})
				}
			}
		}
	}
	return out
}

// Executor runs an experiment and writes its result directory.
type Executor struct {
	Exp *Experiment
	// Probe makes the probe for one path of one cell group.
	Probe func(s *CellGroup, p path.Path) (load.Probe, error)
	// Header is completed with the experiment and written first.
	Header result.Header
	// OnStep, when set, is called after each step with its run record.
	OnStep func(done, total int, r result.Run)
	// Wire, when set, checks each run's traffic on the wire.
	Wire WireCheck
	// Done lists steps (by Seq) already in the samples file: Run appends
	// the rest to it instead of starting a new one (resume).
	Done map[int]bool
	// Rewarmed lists the re-warm runs already in the samples file by
	// their Run (Resume.Rewarmed): a re-warm takes a number none has.
	Rewarmed map[int]bool
	// Conditions, when set, sets up what a cell's runs need around them
	// (background traffic, a server-side capture) and records it.
	Conditions Conditions
	// Segment, when set, runs only its share of each run's users.
	Segment *result.Segment
	// StartAt, when set, starts each step at its slot of the schedule
	// that begins then (Schedule) instead of after the previous step and
	// its pause; a step that starts late records by how much.
	StartAt time.Time
	// Roles are the lab's network namespaces by role (server, r1, …),
	// whose processes' CPU each run's self-check reads (nil off the lab).
	Roles map[string]string
	// TCPInfo makes every sample carry its TCP connection's figures
	// (load.WithTCPInfo: MSS, path MTU, retransmissions).
	TCPInfo bool
	// Totals, when the experiment keeps only some sample rows
	// (SampleEvery), sums every sample of a run for its record
	// (report.NewTotaler).
	Totals func() result.Totaler
	// writer is the samples' writer while Execute runs (Written).
	writer atomic.Pointer[result.Writer]
}

// Written is how many samples and bytes (compressed) the running Execute
// has written so far: for the progress line.
func (r *Executor) Written() (samples, bytes int64) {
	if w := r.writer.Load(); w != nil {
		return w.Written()
	}
	return 0, 0
}

// Conditions surround each run: Begin before its first transaction (it may
// wait, e.g. for background traffic to ramp up), End after its last, with
// the run's record and, for cells with ServerCapture, its samples, which
// End may complete before they are written.
type Conditions interface {
	Begin(ctx context.Context, s *CellGroup, st Step) error
	End(s *CellGroup, st Step, rec *result.Run, samples []result.Sample)
	// Finish ends whatever is still running after the last run.
	Finish()
}

// WireCheck proves on the wire what a run's path claims.
type WireCheck interface {
	// Start begins counting for a run of the service key (CellGroup.WireKey)
	// over p.
	Start(key string, p path.Path)
	// Stop returns the counts, and an error when they do not prove p.
	Stop(p path.Path) (result.Wire, error)
}

// Explainer is a WireCheck that knows more of why a transaction failed
// than the client saw (a NAT on the path that had no port for it): it may
// rename a failed sample's kind and complete its error before it is
// written.
type Explainer interface {
	Explain(p path.Path, s *result.Sample)
}

// ErrInterrupted is returned when ctx ended before the plan did; every
// finished run is on disk.
var ErrInterrupted = errors.New("experiment: interrupted")

// Execute executes the plan into dir, and returns after the samples file is
// flushed and closed. dir must hold nothing, unless Done is set: then its
// samples file (cut back to its last finished run, see Resumable) grows.
func (r *Executor) Execute(ctx context.Context, dir string) error {
	if err := r.Exp.Validate(); err != nil {
		return err
	}
	if err := r.Exp.CheckSampleEvery(r.Segment != nil); err != nil {
		return fmt.Errorf("experiment: sample_every: %w", err)
	}
	if r.Exp.SampleEvery > 1 && r.Totals == nil {
		return errors.New("experiment: sample_every needs the runner's Totals")
	}
	type key struct {
		cell int
		p    path.Path
	}
	probes := map[key]load.Probe{}
	for ci := range r.Exp.Groups {
		c := &r.Exp.Groups[ci]
		for _, p := range c.Paths {
			pr, err := r.Probe(c, p)
			if err != nil {
				return fmt.Errorf("experiment: %s over %s: %w", c.CellName(), p, err)
			}
			probes[key{ci, p}] = pr
		}
	}
	recordProbes(r.Exp, func(ci int, p path.Path) load.Probe { return probes[key{ci, p}] })
	open := result.CreateSamples
	if r.Done != nil {
		open = result.AppendSamples // in the form it has
	}
	f, w, err := open(dir) // its lock held until f closes
	if err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	r.writer.Store(w)
	w.KeepEvery(r.Exp.SampleEvery, r.Totals)
	if r.Done == nil {
		h := r.Header
		h.Name = r.Exp.Name
		h.Baseline = string(r.Exp.Baseline)
		h.Spec = r.Exp
		h.SampleEvery = r.Exp.SampleEvery
		w.Header(h)
	}
	runErr := r.runPlan(ctx, w, func(st Step) load.Probe { return probes[key{st.Group, st.Path}] })
	for _, pr := range probes {
		if c, ok := pr.(io.Closer); ok {
			c.Close() // long-lived sockets of a load-mode probe
		}
	}
	if r.Conditions != nil {
		r.Conditions.Finish()
	}
	werr := w.Close()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if runErr != nil {
		return runErr
	}
	return werr
}

// recordProbes sets in each cell group's params what its probes record of
// how they ran (proto.Recorder: http's engine), over what the cell asked
// for ("auto"). Paths that differ are named: "ipv4=evloop dual=go-dial".
func recordProbes(e *Experiment, probeOf func(cell int, p path.Path) load.Probe) {
	for ci := range e.Groups {
		c := &e.Groups[ci]
		byPath := map[string][]string{}
		for _, p := range c.Paths {
			r, ok := probeOf(ci, p).(proto.Recorder)
			if !ok {
				continue
			}
			for k, v := range r.Record() {
				byPath[k] = append(byPath[k], string(p)+"="+v)
			}
		}
		for k, vals := range byPath {
			if c.Params == nil {
				c.Params = map[string]string{}
			}
			c.Params[k] = strings.Join(vals, " ")
			if same(vals) {
				_, c.Params[k], _ = strings.Cut(vals[0], "=")
			}
		}
	}
}

// same says whether every "path=value" has the first's value.
func same(vals []string) bool {
	_, first, _ := strings.Cut(vals[0], "=")
	for _, v := range vals[1:] {
		if _, w, _ := strings.Cut(v, "="); w != first {
			return false
		}
	}
	return true
}

func (r *Executor) runPlan(ctx context.Context, w *result.Writer, probeOf func(Step) load.Probe) error {
	plan := r.Exp.Plan()
	var slots []time.Time
	if !r.StartAt.IsZero() {
		slots = r.Exp.Schedule(r.StartAt)
	}
	last := -1 // the last step to be done, for the pause after it
	for _, st := range plan {
		if !r.Done[st.Seq] {
			last = st.Seq
		}
	}
	rewarm := r.Exp.rewarms(r.Done)
	for i, st := range plan {
		if r.Done[st.Seq] {
			continue
		}
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		if rewarm[st.Seq] {
			if slots != nil && !waitUntil(ctx, r.rewarmAt(plan, slots, i)) {
				return ErrInterrupted
			}
			if err := r.rewarm(ctx, w, st, probeOf(st)); err != nil {
				return err
			}
		}
		chk := prepareCheck(r.Roles) // before the slot: it reads /proc
		var slot time.Time
		if slots != nil {
			if slot = slots[i]; !waitUntil(ctx, slot) {
				return ErrInterrupted
			}
		}
		rec, err := r.runStep(ctx, w, st, slot, probeOf(st), chk)
		if err != nil {
			return err
		}
		if r.OnStep != nil {
			r.OnStep(i+1, len(plan), rec)
		}
		if rec.Err == errInterrupted {
			return ErrInterrupted
		}
		// Runs on a schedule keep their slots; others pause between them.
		if pause := time.Duration(r.Exp.Groups[st.Group].Pause); pause > 0 && st.Seq != last && slots == nil {
			select {
			case <-ctx.Done():
				return ErrInterrupted
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// rewarms says which steps of a resumed experiment (done: the steps
// finished before) a warm-up runs again before: for each cell group with
// warm-up runs, path and connection count, the first step left when it is
// a counted run. The process that ran the warm-up is gone, and with it
// what the warm-up warmed (kept connections, TLS sessions, caches): the
// first counted run after a resume would pay for it again, unlike the
// others (trial4 F9).
func (e *Experiment) rewarms(done map[int]bool) map[int]bool {
	if done == nil {
		return nil
	}
	type key struct {
		group, conns int
		p            path.Path
	}
	seen, out := map[key]bool{}, map[int]bool{}
	for _, st := range e.Plan() {
		k := key{st.Group, st.Conns, st.Path}
		if done[st.Seq] || seen[k] {
			continue
		}
		seen[k] = true
		if !st.Warmup && e.Groups[st.Group].Warmup > 0 {
			out[st.Seq] = true
		}
	}
	return out
}

// rewarmAt is when a resumed segment on a schedule re-warms before step
// i: once the slot before it has only its margin and pause left, when
// every segment's run of the step before has ended (even one that waited
// out its timeout), so the re-warm's load falls on none of theirs. A
// re-warm longer than that margin makes step i late, and it says so.
func (r *Executor) rewarmAt(plan []Step, slots []time.Time, i int) time.Time {
	at := slots[i].Add(-SlotMargin)
	if i > 0 {
		at = at.Add(-time.Duration(r.Exp.Groups[plan[i-1].Group].Pause))
	}
	return at
}

// rewarm runs the warm-up again before step st (rewarms): a warm-up run,
// not counted, of seq result.RewarmIndex(st.Seq), then the group's pause.
// Its run number is the first result.RewarmRun of the step the file does
// not hold yet (Rewarmed): an earlier resume may have re-warmed the same step
// and been interrupted before finishing it.
func (r *Executor) rewarm(ctx context.Context, w *result.Writer, st Step, probe load.Probe) error {
	run, steps := result.RewarmIndex(st.Seq), len(r.Exp.Plan())
	for nth := 1; r.Rewarmed[run]; nth++ {
		run = result.RewarmRun(st.Seq, nth, steps)
	}
	st.Run, st.Seq, st.Warmup, st.Rewarm = run, result.RewarmIndex(st.Seq), true, true
	rec, err := r.runStep(ctx, w, st, time.Time{}, probe, prepareCheck(r.Roles))
	if err != nil {
		return err
	}
	if rec.Err == errInterrupted {
		return ErrInterrupted
	}
	if pause := time.Duration(r.Exp.Groups[st.Group].Pause); pause > 0 {
		select {
		case <-ctx.Done():
			return ErrInterrupted
		case <-time.After(pause):
		}
	}
	return nil
}

// errInterrupted is the error of a run a signal cut short.
const errInterrupted = "interrupted"

// runStep runs one step of the plan (its conditions around it, its wire
// checked, its users' load, its self-check) and writes its samples and its
// run record. A run at a slot records how late it started.
func (r *Executor) runStep(ctx context.Context, w *result.Writer, st Step, slot time.Time, probe load.Probe, chk *selfCheck) (result.Run, error) {
	spec := &r.Exp.Groups[st.Group]
	name := spec.CellName()
	cell := result.CellKey(name, string(st.Path), st.Conns)
	rec := result.Run{Cell: cell, Protocol: name, Path: string(st.Path), Conns: st.Conns,
		Run: st.Run, Warmup: st.Warmup, Rewarm: st.Rewarm, Seq: st.Seq, Start: time.Now().UTC()}
	// Samples are written as they complete, unless the conditions
	// complete them after the run (server-side figures).
	explain, _ := r.Wire.(Explainer)
	out := &sink{w: w, chk: chk, hold: r.Conditions != nil && spec.ServerCapture,
		label: sampleLabel{cell: cell, protocol: name, step: st, explain: explain}}
	if r.Conditions != nil {
		if err := r.Conditions.Begin(ctx, spec, st); err != nil {
			if ctx.Err() != nil {
				return rec, ErrInterrupted
			}
			return rec, fmt.Errorf("experiment: %s over %s: %w", name, st.Path, err)
		}
	}
	if r.Wire != nil {
		r.Wire.Start(spec.WireKeyOn(st.Path), st.Path)
	}
	// The run starts with its load: the background's lead-in and the
	// wire check's quiet gap are no part of the time rate/s divides by.
	chk.begin()
	rec.Start = time.Now().UTC()
	if !slot.IsZero() {
		rec.Slot = slot.UTC()
		if late := rec.Start.Sub(slot); late > result.LateAfter {
			rec.LateNS = int64(late)
		} else if late < -result.LateAfter {
			rec.EarlyNS = int64(-late)
		}
	}
	r.load(ctx, spec, st, probe, out.add)
	rec.End = time.Now().UTC()
	rec.Load = chk.end(time.Duration(out.waited.Load()))
	rec.Completed, rec.Failed = out.ok.get(), out.failed.get()
	if r.Wire != nil {
		counts, err := r.Wire.Stop(st.Path)
		rec.Wire = &counts
		// A run whose every transaction failed before anything crossed the
		// measured link (a NAT out of ports drops them at r1) has nothing
		// to prove: its failures are the figure, counted, never left out.
		if err != nil && !(counts.Carried() == 0 && rec.Completed == 0 && rec.Failed > 0) {
			rec.Err = "wire: " + err.Error()
		}
	}
	if r.Conditions != nil {
		r.Conditions.End(spec, st, &rec, out.held)
	}
	out.flush()
	if ctx.Err() != nil {
		rec.Err = errInterrupted
	}
	w.Run(rec)
	return rec, w.Sync()
}

// load runs the step's users: each once (the closed model), or for the
// group's duration (sustained).
func (r *Executor) load(ctx context.Context, spec *CellGroup, st Step, probe load.Probe, emit func(result.Sample)) {
	users := load.All(st.Conns)
	if r.Segment != nil {
		first, n := r.Segment.Users(st.Conns)
		users = load.Users{First: first, N: n}
	}
	timeout := time.Duration(spec.Timeout)
	if r.TCPInfo {
		ctx = load.WithTCPInfo(ctx)
	}
	if spec.Duration > 0 {
		load.Sustained(ctx, probe, users, time.Duration(spec.Duration), timeout, emit)
		return
	}
	load.Closed(ctx, probe, users, timeout, emit)
}

// sink takes a run's samples as its users emit them (concurrently): it
// labels and counts each, and writes it, or holds it for the run's
// conditions to complete.
type sink struct {
	w          *result.Writer
	chk        *selfCheck // the run's self-check: its completions' times
	waited     atomic.Int64
	hold       bool
	label      sampleLabel
	ok, failed counter
	mu         sync.Mutex
	held       []result.Sample
}

// sampleLabel is what a run's samples are labelled with: its cell, its
// step, and the wire's explanation of a failed one.
type sampleLabel struct {
	cell, protocol string
	step           Step
	explain        Explainer
}

func (k *sink) add(s result.Sample) {
	if s.OK() {
		k.ok.add()
	} else {
		k.failed.add()
	}
	k.chk.record(&s)
	l := &k.label
	s.Cell, s.Protocol, s.Conns, s.Run, s.Warmup = l.cell, l.protocol, l.step.Conns, l.step.Run, l.step.Warmup
	if l.explain != nil && !s.OK() {
		// A copy on the heap for the explainer, for failed samples only:
		// a pointer to s itself would move every sample to the heap.
		f := new(result.Sample)
		*f = s
		l.explain.Explain(l.step.Path, f)
		s = *f
	}
	if k.hold {
		k.mu.Lock()
		k.held = append(k.held, s)
		k.mu.Unlock()
		return
	}
	t0 := time.Now()
	k.w.Sample(s)
	if d := time.Since(t0); d > recordWaitMin {
		k.waited.Add(int64(d)) // the writer's queue was full
	}
}

// flush writes the samples held.
func (k *sink) flush() {
	for _, s := range k.held {
		k.w.Sample(s)
	}
}

// waitUntil waits for t, or returns false when ctx ends first.
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// specFields is CellGroup without its methods: its own fields' JSON.
type specFields CellGroup

// MarshalJSON writes the cell group flat: its own fields, then its
// protocol's options (each protocol's json tags name them), as results
// have always recorded them.
func (s CellGroup) MarshalJSON() ([]byte, error) {
	own, err := json.Marshal(specFields(s))
	if err != nil || s.Options == nil {
		return own, err
	}
	opts, err := json.Marshal(s.Options)
	if err != nil {
		return nil, err
	}
	if opts, err = redact(opts, proto.Secrets(s.Options)); err != nil {
		return nil, err
	}
	if len(opts) <= 2 { // {}
		return own, nil
	}
	return append(append(own[:len(own)-1], ','), opts[1:]...), nil
}

// UnmarshalJSON reads a cell group as MarshalJSON writes it: its options
// into its protocol's options struct (none for a protocol this version
// does not know).
func (s *CellGroup) UnmarshalJSON(b []byte) error {
	var f specFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = CellGroup(f)
	if p, ok := all.Get(s.Protocol); ok {
		s.Options = p.New()
		if err := json.Unmarshal(b, s.Options); err != nil {
			return fmt.Errorf("experiment: cell group %s: %s options: %w", s.CellName(), s.Protocol, err)
		}
	}
	return nil
}

// Opts are the cell group's options, or none (a protocol this version
// does not know, as tests use): every optional behaviour at its default.
func (s *CellGroup) Opts() proto.Options {
	if s.Options != nil {
		return s.Options
	}
	return &noOptions{}
}

// noOptions are the options of a protocol v6lab does not know.
type noOptions struct{ proto.Common }

func (*noOptions) Check(result.Where, proto.Given) error { return errors.New("no such protocol") }
func (*noOptions) Destination() string                   { return "" }
func (*noOptions) Target(path.Path) (proto.Endpoint, error) {
	return proto.Endpoint{}, errors.New("no such protocol")
}
func (*noOptions) Probe(proto.Endpoint, path.Path) (load.Probe, error) {
	return nil, errors.New("no such protocol")
}

// redact masks the password of a url option (proto.Redact) and the
// secret options named: results and reports record them without. A run
// that needed them cannot be resumed from its record (PrepareResume says
// so).
func redact(opts []byte, secrets []string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(opts, &m); err != nil {
		return nil, err
	}
	var u string
	urlMasked := false
	if raw, ok := m[proto.OptURL]; ok && json.Unmarshal(raw, &u) == nil && proto.Redact(u) != u {
		m[proto.OptURL], _ = json.Marshal(proto.Redact(u))
		urlMasked = true
	}
	if !urlMasked && len(secrets) == 0 {
		return opts, nil
	}
	for _, name := range secrets {
		m[name], _ = json.Marshal(proto.Mask)
	}
	return json.Marshal(m)
}
