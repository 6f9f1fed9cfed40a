package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/gen/traffic"
	"v6lab/internal/input/specfile"
	"v6lab/internal/input/units"
	"v6lab/internal/lab"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/sock/path"
)

// file is the YAML form of an Experiment (docs/experiments.md).
type file struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Where       string     `yaml:"where"`
	Topology    string     `yaml:"topology"`
	Congestion  string     `yaml:"congestion"`
	Servers     string     `yaml:"servers"`
	Paths       []string   `yaml:"paths"`
	Baseline    string     `yaml:"baseline"`
	Runs        *int       `yaml:"runs"`
	Warmup      *int       `yaml:"warmup"`
	Timeout     *Duration  `yaml:"timeout"`
	Pause       *Duration  `yaml:"pause"`
	Order       string     `yaml:"order"`
	Seed        int64      `yaml:"seed"`
	Spin        *Duration  `yaml:"spin"`
	Cells       []cellFile `yaml:"cells"`
}

type cellFile struct {
	Protocol   string    `yaml:"protocol"`
	Label      string    `yaml:"label"`
	Conns      []int     `yaml:"conns"`
	Paths      []string  `yaml:"paths"`
	Runs       *int      `yaml:"runs"`
	Warmup     *int      `yaml:"warmup"`
	Timeout    *Duration `yaml:"timeout"`
	Pause      *Duration `yaml:"pause"`
	Duration   Duration  `yaml:"duration"`
	Objects    *int      `yaml:"objects"`
	URL        string    `yaml:"url"`
	Query      string    `yaml:"query"`
	DNSServers []string  `yaml:"dns_servers"`
	Transport  string    `yaml:"transport"`
	Mode       string    `yaml:"mode"`
	Expect     string    `yaml:"expect"`
	Type       string    `yaml:"type"`
	TLS        bool      `yaml:"tls"`
	TLSResume  bool      `yaml:"tls_resume"`
	TLSGroups  string    `yaml:"tls_groups"`
	// http: its version (a list: a cell group per version), QUIC's 0-RTT
	HTTPVersion versionList `yaml:"http_version"`
	ZeroRTT     bool        `yaml:"zero_rtt"`
	Keepalive   bool        `yaml:"keepalive"`
	expanded    bool        // one version of a list
	// imap
	Users      *int   `yaml:"users"`
	UserFormat string `yaml:"user_format"`
	Password   string `yaml:"password"`
	// smtp
	From     string `yaml:"from"`
	To       string `yaml:"to"`
	StartTLS bool   `yaml:"starttls"`
	TLSPin   string `yaml:"tls_pin"`
	// http and ftp files: another client program
	Client string `yaml:"client"`
	// http over the dual path: Happy Eyeballs' Connection Attempt Delay
	AttemptDelay string `yaml:"attempt_delay"`
	// http over the dual path: v6lab's RFC 8305 (default) or Go's net.Dialer
	Dialer string `yaml:"dialer"`
	// http over the dual path: the embedded DNS server's AAAA answer late
	AAAADelay string `yaml:"aaaa_delay"`
	// embedded or real: overrides the experiment's servers for this cell
	Server string `yaml:"server"`
	// ftp
	File   string `yaml:"file"`
	Active bool   `yaml:"active"`
	// tcp and udp trials
	Time       Duration `yaml:"time"`
	Omit       Duration `yaml:"omit"`
	Interval   Duration `yaml:"interval"`
	Bytes      string   `yaml:"bytes"`
	Streams    *int     `yaml:"streams"`
	Window     string   `yaml:"window"`
	SndBuf     string   `yaml:"sndbuf"`
	RcvBuf     string   `yaml:"rcvbuf"`
	MSS        *int     `yaml:"mss"`
	Congestion string   `yaml:"congestion"`
	Reverse    bool     `yaml:"reverse"`
	Bottleneck string   `yaml:"bottleneck"`
	Rate       string   `yaml:"rate"`
	Size       string   `yaml:"size"`
	Servers    []string `yaml:"servers"`
	// congestion (any protocol, in the lab)
	Background    string `yaml:"background"`
	ServerCapture bool   `yaml:"server_capture"`
	// link_rate: the lab's links reshaped for this cell group's runs
	LinkRate string `yaml:"link_rate"`
	// ipv6_loss: the client's IPv6 dropped at r1 (percent; 100: blackholed)
	IPv6Loss *float64 `yaml:"ipv6_loss"`
	// loss: every packet between the routers dropped (percent), each way
	Loss *float64 `yaml:"loss"`
	// ipv6_delay: IPv6 toward the client held this long at r1 (netem)
	IPv6Delay string `yaml:"ipv6_delay"`
}

// Defaults of an experiment file.
const (
	DefaultRuns    = 11
	DefaultWarmup  = 1
	DefaultTimeout = 30 * time.Second
	DefaultPause   = 100 * time.Millisecond
	// MaxConns bounds one cell's simultaneous connections per path.
	MaxConns = 100000
)

// allOptions are every protocol's options, for the "does not apply" rule.
func allOptions() []string {
	var out []string
	for _, p := range all.List {
		for _, o := range p.Options() {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

var (
	congestionRE = regexp.MustCompile(`^[a-z0-9_]{1,16}$`)
	nameRE       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	labelRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`)
)

// Load reads an experiment file. Every problem is an error naming the file,
// the line and the field.
func Load(name string) (*Experiment, error) {
	data, err := specfile.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	e, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	if e.Topology != "" && !filepath.IsAbs(e.Topology) {
		e.Topology = filepath.Join(filepath.Dir(name), e.Topology)
	}
	if e.Topology != "" {
		if _, err := lab.LoadTopology(e.Topology); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Parse reads an experiment from data, the contents of file name.
func Parse(name string, data []byte) (*Experiment, error) {
	var f file
	doc, err := specfile.Decode(name, data, &f)
	if err != nil {
		return nil, err
	}
	return f.experiment(doc)
}

func (f *file) experiment(doc *specfile.Doc) (*Experiment, error) {
	e := &Experiment{Name: f.Name, Description: f.Description, Where: f.Where, Topology: f.Topology,
		Servers: f.Servers, Order: f.Order, Seed: f.Seed}
	switch {
	case !doc.Has("name"):
		return nil, doc.Errorf("name", "is required")
	case CheckName(f.Name) != nil:
		return nil, doc.Errorf("name", "%v", CheckName(f.Name))
	}
	if e.Where == "" {
		e.Where = "auto"
	}
	if !slices.Contains([]string{"auto", "lab", "loopback", "hosts"}, e.Where) {
		return nil, doc.Errorf("where", "%q is not a place to run: want auto, lab, loopback or hosts", f.Where)
	}
	if f.Topology != "" && (e.Where == "loopback" || e.Where == "hosts") {
		return nil, doc.Errorf("topology", "a topology needs the lab, but where is %s", e.Where)
	}
	if doc.Has("congestion") {
		switch {
		case !congestionRE.MatchString(f.Congestion):
			return nil, doc.Errorf("congestion", "%q is not a congestion control name (cubic, reno, bbr, …)", f.Congestion)
		case e.Where == "loopback" || e.Where == "hosts":
			return nil, doc.Errorf("congestion", "sets the lab's hosts, but where is %s (on other hosts, set net.ipv4.tcp_congestion_control there)", e.Where)
		}
		e.Congestion = f.Congestion
	}
	if f.Spin != nil {
		if err := CheckSpin(time.Duration(*f.Spin)); err != nil {
			return nil, doc.Errorf("spin", "%v", err)
		}
		e.Spin = f.Spin
	}
	if e.Servers == "" {
		e.Servers = "embedded"
	}
	switch e.Servers {
	case "embedded":
	case "real":
		if e.Where == "loopback" || e.Where == "hosts" {
			return nil, doc.Errorf("servers", "real servers run in the lab's server host, but where is %s", e.Where)
		}
	default:
		return nil, doc.Errorf("servers", "%q: want embedded or real", f.Servers)
	}
	if e.Order == "" {
		e.Order = OrderInterleaved
	}
	if e.Order != OrderInterleaved && e.Order != OrderShuffled {
		return nil, doc.Errorf("order", "%q: want interleaved or shuffled", f.Order)
	}
	paths, err := f.paths(doc, "paths", f.Paths, e.Where)
	if err != nil {
		return nil, err
	}
	if paths == nil {
		paths = []path.Path{path.IPv4, path.IPv6, path.SixIn4}
		if e.Where == "loopback" || e.Where == "hosts" {
			paths = paths[:2]
		}
	}
	e.Baseline = path.IPv4
	if doc.Has("baseline") {
		if e.Baseline, err = path.Parse(f.Baseline); err != nil {
			return nil, doc.Errorf("baseline", "%q is not a path (%s)", f.Baseline, path.Names())
		}
	}
	base := Spec{Name: f.Name, Runs: DefaultRuns, Warmup: DefaultWarmup, Timeout: Duration(DefaultTimeout),
		Pause: Duration(DefaultPause), Baseline: e.Baseline}
	if err := runSettings(doc, "", &base, f.Runs, f.Warmup, f.Timeout, f.Pause); err != nil {
		return nil, err
	}
	if len(f.Cells) == 0 {
		return nil, doc.Errorf("cells", "at least one cell is needed (protocol and connection counts)")
	}
	labels := map[string]string{}
	var srcs []cellFile // the file's cell of each group (one per version of a list)
	var ats []string
	for i, cf := range f.Cells {
		at := fmt.Sprintf("cells[%d]", i)
		cvs, err := cf.versionsOf(doc, at)
		if err != nil {
			return nil, err
		}
		for _, c := range cvs {
			s, err := c.spec(doc, at, base, paths, e)
			if err != nil {
				return nil, err
			}
			if prev, dup := labels[s.CellName()]; dup {
				field := at + ".label"
				if !doc.Has(field) {
					field = at + ".protocol"
				}
				return nil, doc.Errorf(field, "%s is also the name of %s: give one a distinct label", s.CellName(), prev)
			}
			labels[s.CellName()] = at
			if !slices.Contains(s.Paths, e.Baseline) {
				field := at + ".paths"
				if !doc.Has(field) {
					field = "baseline"
				}
				return nil, doc.Errorf(field, "the cell does not measure the baseline path %s, so nothing can be compared with it", e.Baseline)
			}
			e.Cells = append(e.Cells, s)
			srcs, ats = append(srcs, c), append(ats, at)
		}
	}
	for i := range e.Cells {
		c := &e.Cells[i]
		at := ats[i]
		server := proto.Or(srcs[i].Server, e.Servers)
		switch server {
		case "embedded":
			continue
		case "real":
		default:
			return nil, doc.Errorf(at+".server", "%q: want embedded or real", srcs[i].Server)
		}
		if e.Where == "loopback" || e.Where == "hosts" {
			return nil, doc.Errorf(at+".server", "real servers run in the lab's server host, but where is %s", e.Where)
		}
		if err := RealServersFit(c); err != nil {
			field := at + ".server"
			if !doc.Has(field) {
				field = at
			}
			return nil, doc.Errorf(field, "%v", err)
		}
		c.Server = "real"
	}
	if err := e.Validate(); err != nil { // rules that belong to no one field
		return nil, fmt.Errorf("%s: %w", doc.File, err)
	}
	return e, nil
}

// paths reads a list of paths at field; nil when the file gave none.
func (f *file) paths(doc *specfile.Doc, field string, in []string, where string) ([]path.Path, error) {
	if !doc.Has(field) {
		return nil, nil
	}
	if len(in) == 0 {
		return nil, doc.Errorf(field, "the list is empty")
	}
	var out []path.Path
	for i, s := range in {
		at := fmt.Sprintf("%s[%d]", field, i)
		p, err := path.Parse(s)
		if err != nil {
			return nil, doc.Errorf(at, "%q is not a path (%s)", s, path.Names())
		}
		if where == "loopback" || where == "hosts" {
			if err := p.OffLab("where: " + where); err != nil {
				return nil, doc.Errorf(at, "%v", err)
			}
		}
		if slices.Contains(out, p) {
			return nil, doc.Errorf(at, "%s is listed twice", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// runSettings checks and applies runs, warm-up, timeout and pause given at
// prefix (the top level, or one cell).
func runSettings(doc *specfile.Doc, prefix string, s *Spec, runs, warmup *int, timeout, pause *Duration) error {
	at := func(f string) string { return prefix + f }
	if runs != nil {
		if err := checkRuns(*runs); err != nil {
			return doc.Errorf(at("runs"), "%v", err)
		}
		s.Runs = *runs
	}
	if warmup != nil {
		if *warmup < 0 {
			return doc.Errorf(at("warmup"), "%v", checkWarmup(*warmup, s.Runs))
		}
		s.Warmup = *warmup
	}
	if err := checkWarmup(s.Warmup, s.Runs); err != nil {
		field := at("warmup")
		if !doc.Has(field) {
			field = at("runs")
		}
		if !doc.Has(field) {
			field = "warmup"
		}
		return doc.Errorf(field, "%v", err)
	}
	if timeout != nil {
		if err := checkTimeout(time.Duration(*timeout)); err != nil {
			return doc.Errorf(at("timeout"), "%v", err)
		}
		s.Timeout = *timeout
	}
	if pause != nil {
		if err := checkNotNegative(time.Duration(*pause)); err != nil {
			return doc.Errorf(at("pause"), "%v", err)
		}
		s.Pause = *pause
	}
	return nil
}

func (c *cellFile) spec(doc *specfile.Doc, at string, base Spec, paths []path.Path, e *Experiment) (Spec, error) {
	s := base
	field := func(f string) string { return at + "." + f }
	s.Protocol, s.Label = c.Protocol, c.Label
	pr, ok := all.Get(c.Protocol)
	switch {
	case !doc.Has(field("protocol")):
		return s, doc.Errorf(at, "protocol is required (%s)", all.NameList("or"))
	case !ok:
		return s, doc.Errorf(field("protocol"), "%q is not a protocol v6lab knows (%s)", c.Protocol, strings.Join(all.Names(), ", "))
	}
	opts := pr.Options()
	if doc.Has(field("label")) && !labelRE.MatchString(c.Label) {
		return s, doc.Errorf(field("label"), "%q: lowercase letters, digits, dot, dash and underscore, up to 32", c.Label)
	}
	for _, o := range allOptions() {
		if doc.Has(field(o)) && !slices.Contains(opts, o) {
			return s, doc.Errorf(field(o), "does not apply to protocol %s (it takes: %v)", c.Protocol, opts)
		}
	}
	_, trial := pr.(interface{ SingleTest() bool })
	if trial && !doc.Has(field("conns")) {
		c.Conns = []int{1}
	} else if trial && (len(c.Conns) != 1 || c.Conns[0] != 1) {
		return s, doc.Errorf(field("conns"), "a %s trial is one test: conns must be [1] (use streams for parallel connections)", c.Protocol)
	} else if !doc.Has(field("conns")) {
		return s, doc.Errorf(at, "conns is required (simultaneous connections per run, e.g. [1, 10, 100])")
	}
	if i, err := checkConns(c.Conns); err != nil {
		if i < 0 {
			return s, doc.Errorf(field("conns"), "%v", err)
		}
		return s, doc.Errorf(fmt.Sprintf("%s[%d]", field("conns"), i), "%v", err)
	}
	s.Conns = c.Conns
	var f file
	own, err := f.paths(doc, field("paths"), c.Paths, e.Where)
	if err != nil {
		return s, err
	}
	s.Paths = slices.Clone(paths) // each cell's own: callers edit them
	if own != nil {
		s.Paths = own
	}
	// pathAt names paths[i] where it was given: the cell's, or the file's.
	pathAt := func(i int) string {
		if own == nil {
			return fmt.Sprintf("paths[%d]", i)
		}
		return fmt.Sprintf("%s[%d]", field("paths"), i)
	}
	for i, p := range s.Paths {
		if err := DualFits(p, c.Protocol, c.Client); err != nil {
			return s, doc.Errorf(pathAt(i), "%v", err)
		}
	}
	if err := runSettings(doc, at+".", &s, c.Runs, c.Warmup, c.Timeout, c.Pause); err != nil {
		return s, err
	}
	if err := checkNotNegative(time.Duration(c.Duration)); err != nil {
		return s, doc.Errorf(field("duration"), "%v", err)
	}
	s.Duration = c.Duration
	size, err := c.size()
	if err != nil {
		return s, doc.Errorf(field("size"), "%v", err)
	}
	s.Options = c.options(size)
	given := func(o string) bool { return doc.Has(field(o)) }
	if err := pr.Check(&s.Options, e.Where, given); err != nil {
		oe, ok := proto.AsOptionError(err)
		switch {
		case !ok:
			return s, doc.Errorf(at, "%v", err)
		case oe.Option == "":
			return s, doc.Errorf(at, "%v", oe.Err)
		}
		return s, doc.Errorf(field(oe.Option), "%v", oe.Err)
	}
	for i, p := range s.Paths {
		if err := ProtocolPathFits(p, c.Protocol, &s.Options, e.Where); err != nil {
			if oe, ok := proto.AsOptionError(err); ok && oe.Option != "" {
				return s, doc.Errorf(field(oe.Option), "%v", oe.Err)
			}
			return s, doc.Errorf(pathAt(i), "%v", err)
		}
	}
	if k := all.CellServerKey(c.Protocol, &s.Options); s.Label == "" && k != all.ServerKey(c.Protocol) {
		s.Label = k // a cell of the protocol's other server (https) is named after it
	}
	if c.version() != "" && (c.Label == "" || c.expanded) {
		s.Label = c.versionLabel(s.HTTPVersion, s.TLS) // http, http/2, http/3
	}
	if trial {
		o := s.Test
		// A trial's timeout follows its length unless set.
		if !doc.Has(field("timeout")) && !doc.Has("timeout") {
			s.Timeout = Duration(o.Omit + o.Duration + 30*time.Second)
		}
		if time.Duration(s.Timeout) <= o.Omit+o.Duration {
			return s, doc.Errorf(field("time"), "a trial of %v does not fit in its timeout of %v", o.Omit+o.Duration, time.Duration(s.Timeout))
		}
	}
	if err := c.congestion(doc, at, e.Where, &s); err != nil {
		return s, err
	}
	if c.IPv6Loss != nil {
		switch v := *c.IPv6Loss; {
		case !(v > 0 && v <= 100):
			return s, doc.Errorf(field("ipv6_loss"), "%g is not a share of IPv6 packets to drop: want more than 0 and at most 100 (percent; 100: blackholed)", v)
		case e.Where != "lab" && e.Where != "auto":
			return s, doc.Errorf(field("ipv6_loss"), "IPv6 is dropped at the lab's router, but where is %s", e.Where)
		}
		s.IPv6Loss = *c.IPv6Loss
	}
	if c.Loss != nil {
		switch v := *c.Loss; {
		case !(v > 0 && v < 100):
			return s, doc.Errorf(field("loss"), "%g is not a share of packets to drop: want more than 0 and less than 100 (percent)", v)
		case e.Where != "lab" && e.Where != "auto":
			return s, doc.Errorf(field("loss"), "packets are dropped between the lab's routers, but where is %s", e.Where)
		}
		s.Loss = *c.Loss
	}
	if c.IPv6Delay != "" {
		d, err := time.ParseDuration(c.IPv6Delay)
		switch {
		case err != nil || d <= 0 || d > MaxIPv6Delay:
			return s, doc.Errorf(field("ipv6_delay"), "want a delay such as 50ms, more than 0 and at most %v, not %q", MaxIPv6Delay, c.IPv6Delay)
		case e.Where != "lab" && e.Where != "auto":
			return s, doc.Errorf(field("ipv6_delay"), "IPv6 is delayed at the lab's router, but where is %s", e.Where)
		case c.LinkRate != "":
			return s, doc.Errorf(field("ipv6_delay"), "cannot be combined with link_rate in one cell group (one qdisc tree on r1's link)")
		}
		s.IPv6Delay = Duration(d)
	}
	return s, nil
}

// MaxIPv6Delay bounds ipv6_delay: longer is a blackhole, which ipv6_loss: 100 is.
const MaxIPv6Delay = 10 * time.Second

// congestion reads background and server_capture, which need the lab.
func (c *cellFile) congestion(doc *specfile.Doc, at, where string, s *Spec) error {
	field := func(f string) string { return at + "." + f }
	inLab := where == "lab" || where == "auto"
	if c.Background != "" && c.Background != "none" {
		if _, err := traffic.LevelByName(c.Background); err != nil {
			return doc.Errorf(field("background"), "%q is not a congestion level: want C1B to C6B (the Towson study's Table I) or none", c.Background)
		}
		if !inLab {
			return doc.Errorf(field("background"), "background traffic runs between the lab's generator hosts, but where is %s", where)
		}
		s.Background = c.Background
	}
	if c.ServerCapture {
		if c.Protocol != "http" {
			return doc.Errorf(field("server_capture"), "server-side figures are computed for http cells (from the GET to the client's last ACK), not %s", c.Protocol)
		}
		if !inLab {
			return doc.Errorf(field("server_capture"), "the capture runs in the lab's server host, but where is %s", where)
		}
		if c.TLS {
			return doc.Errorf(field("server_capture"), "the capture's request is the client's first data, which over tls is its ClientHello, not the GET: the figures would not be the study's")
		}
		s.ServerCapture = true
	}
	if c.LinkRate != "" {
		r, err := units.ParseRate(c.LinkRate)
		if err != nil || r == 0 || r > 100e9 {
			return doc.Errorf(field("link_rate"), "want a rate such as 10M or 100M (bits per second), not %q", c.LinkRate)
		}
		if !inLab {
			return doc.Errorf(field("link_rate"), "reshapes the lab's links, but where is %s", where)
		}
		s.LinkRate = r
	}
	return nil
}

// RealServersFit says why a cell group cannot run against the real servers.
func RealServersFit(c *Spec) error { return all.RealFit(c.Protocol, &c.Options) }

// options are the cell's protocol options as given; the protocol's Check
// decodes and checks them.
// size is the cell's size in bytes (4096, 100K; nil: not given).
func (c *cellFile) size() (*int, error) {
	if c.Size == "" {
		return nil, nil
	}
	n, err := units.ParseSize(c.Size)
	if err != nil || n > math.MaxInt32 {
		return nil, fmt.Errorf("%q: want bytes, such as 4096 or 100K", c.Size)
	}
	size := int(n)
	return &size, nil
}

func (c *cellFile) options(size *int) proto.Options {
	o := proto.Options{URL: c.URL, Objects: c.Objects, Query: c.Query, DNSServers: c.DNSServers, Transport: c.Transport, Mode: c.Mode, Expect: c.Expect, Type: c.Type, TLS: c.TLS, TLSResume: c.TLSResume, TLSGroups: c.TLSGroups, HTTPVersion: c.version(), ZeroRTT: c.ZeroRTT, Keepalive: c.Keepalive,
		File: c.File, Active: c.Active, Client: c.Client, From: c.From, To: c.To, StartTLS: c.StartTLS, TLSPin: c.TLSPin,
		UserFormat: c.UserFormat, Password: c.Password, Servers: c.Servers, AttemptDelay: c.AttemptDelay, Dialer: c.Dialer, AAAADelay: c.AAAADelay}
	if c.Users != nil {
		o.Users = *c.Users
	}
	if c.Protocol != "udp" && size != nil { // udp's size is its datagrams'
		o.Size = *size
	}
	if c.Protocol == "tcp" || c.Protocol == "udp" {
		t := &proto.TrialInput{Time: time.Duration(c.Time), Omit: time.Duration(c.Omit), Interval: time.Duration(c.Interval),
			Bytes: c.Bytes, Window: c.Window, SndBuf: c.SndBuf, RcvBuf: c.RcvBuf, Bottleneck: c.Bottleneck, Rate: c.Rate,
			Congestion: c.Congestion, Reverse: c.Reverse}
		for _, v := range []struct {
			from *int
			to   *int
		}{{c.Streams, &t.Streams}, {c.MSS, &t.MSS}, {size, &t.Size}} {
			if v.from != nil {
				*v.to = *v.from
			}
		}
		o.Trial = t
	}
	return o
}

// Scale shrinks an experiment for a quick look on a small machine: every
// connection count, the number of runs, and a trial's length and amount of
// data are multiplied by f (0 < f ≤ 1), keeping at least one connection, two
// counted runs, one second and 1 MiB per cell.
func (e *Experiment) Scale(f float64) error {
	if !(f > 0 && f <= 1) {
		return fmt.Errorf("experiment: scale %g: want more than 0 and at most 1", f)
	}
	e.Scaled = f // recorded with the spec in every result's header
	for i := range e.Cells {
		c := &e.Cells[i]
		var conns []int
		for _, n := range c.Conns {
			m := max(1, int(math.Round(float64(n)*f)))
			if !slices.Contains(conns, m) {
				conns = append(conns, m)
			}
		}
		c.Conns = conns
		c.Runs = max(c.Warmup+2, int(math.Round(float64(c.Runs)*f)))
		if c.File != "" { // files get smaller
			if n, err := units.ParseSize(strings.TrimPrefix(c.File, "/")); err == nil {
				c.File = strconv.FormatInt(max(64<<10, int64(float64(n)*f)), 10)
			}
		}
		if c.Test != nil { // trials get shorter and carry less
			o := *c.Test
			o.Duration = max(time.Second, time.Duration(float64(o.Duration)*f).Round(time.Second))
			if o.Bytes > 0 {
				o.Bytes = max(1<<20, int64(float64(o.Bytes)*f))
			}
			c.Test = &o
			c.Timeout = Duration(o.Omit + o.Duration + 30*time.Second)
		}
	}
	return nil
}
