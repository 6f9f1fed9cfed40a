package experiment

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/path"
	"v6lab/internal/proto/extclient"
	"v6lab/internal/proto/ftp"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/specfile"
	"v6lab/internal/traffic"
	"v6lab/internal/transport"
	"v6lab/internal/units"
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
	// imap
	Users      *int   `yaml:"users"`
	UserFormat string `yaml:"user_format"`
	Password   string `yaml:"password"`
	// smtp
	From     string `yaml:"from"`
	To       string `yaml:"to"`
	StartTLS bool   `yaml:"starttls"`
	// http and ftp files: another client program
	Client string `yaml:"client"`
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
	Size       *int     `yaml:"size"`
	Servers    []string `yaml:"servers"`
	// congestion (any protocol, in the lab)
	Background    string `yaml:"background"`
	ServerCapture bool   `yaml:"server_capture"`
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

// Protocols this version measures, and the options each takes.
var protocolOptions = map[string][]string{
	"http": {"objects", "file", "client", "url", "dns_servers"},
	"dns":  {"query", "dns_servers", "transport", "mode"},
	"ftp":  {"file", "active", "client", "url", "dns_servers"},
	"smtp": {"from", "to", "size", "starttls", "url", "dns_servers"},
	"imap": {"users", "user_format", "password", "url", "dns_servers"},
	"tcp":  {"time", "omit", "interval", "bytes", "streams", "window", "sndbuf", "rcvbuf", "mss", "congestion", "bottleneck", "reverse", "servers"},
	"udp":  {"time", "omit", "interval", "rate", "size", "sndbuf", "rcvbuf", "reverse", "servers"},
}

// allOptions are every protocol option, for the "does not apply" rule.
var allOptions = []string{"client", "users", "user_format", "password", "from", "to", "starttls", "file", "active", "objects", "url", "query", "dns_servers", "transport", "mode", "time", "omit", "interval", "bytes", "streams",
	"window", "sndbuf", "rcvbuf", "mss", "congestion", "bottleneck", "reverse", "rate", "size", "servers"}

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
			return nil, doc.Errorf("baseline", "%q is not a path (ipv4, ipv6, 6in4)", f.Baseline)
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
	for i, c := range f.Cells {
		at := fmt.Sprintf("cells[%d]", i)
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
	}
	for i := range e.Cells {
		c := &e.Cells[i]
		at := fmt.Sprintf("cells[%d]", i)
		server := cmpOr(f.Cells[i].Server, e.Servers)
		switch server {
		case "embedded":
			continue
		case "real":
		default:
			return nil, doc.Errorf(at+".server", "%q: want embedded or real", f.Cells[i].Server)
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
			return nil, doc.Errorf(at, "%q is not a path (ipv4, ipv6, 6in4)", s)
		}
		if p.Kind().LabOnly && (where == "loopback" || where == "hosts") {
			return nil, doc.Errorf(at, "6in4 needs the lab's tunnel, but where is %s (only ipv4 and ipv6 there)", where)
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
	opts, ok := protocolOptions[c.Protocol]
	switch {
	case !doc.Has(field("protocol")):
		return s, doc.Errorf(at, "protocol is required (http, dns, ftp, smtp, imap, tcp or udp)")
	case !ok:
		return s, doc.Errorf(field("protocol"), "%q is not a protocol v6lab knows (http, dns, ftp, smtp, imap, tcp, udp)", c.Protocol)
	}
	if doc.Has(field("label")) && !labelRE.MatchString(c.Label) {
		return s, doc.Errorf(field("label"), "%q: lowercase letters, digits, dot, dash and underscore, up to 32", c.Label)
	}
	for _, o := range allOptions {
		if doc.Has(field(o)) && !slices.Contains(opts, o) {
			return s, doc.Errorf(field(o), "does not apply to protocol %s (it takes: %v)", c.Protocol, opts)
		}
	}
	trial := c.Protocol == "tcp" || c.Protocol == "udp"
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
	if err := runSettings(doc, at+".", &s, c.Runs, c.Warmup, c.Timeout, c.Pause); err != nil {
		return s, err
	}
	if err := checkNotNegative(time.Duration(c.Duration)); err != nil {
		return s, doc.Errorf(field("duration"), "%v", err)
	}
	s.Duration = c.Duration
	if c.Objects != nil {
		if *c.Objects < 0 || *c.Objects > httpp.MaxObjects {
			return s, doc.Errorf(field("objects"), "%d: want 0 to %d embedded objects", *c.Objects, httpp.MaxObjects)
		}
		if e.Where == "hosts" {
			return s, doc.Errorf(field("objects"), "sets the embedded server's page; with where: hosts the real page decides")
		}
		s.Objects = c.Objects
	}
	hosts := e.Where == "hosts"
	switch c.Protocol {
	case "http":
		if hosts && c.URL == "" {
			return s, doc.Errorf(at, "url is required with where: hosts (the page to fetch)")
		}
		if !hosts && c.URL != "" {
			return s, doc.Errorf(field("url"), "only with where: hosts; v6lab chooses the embedded server's URL")
		}
		if c.URL != "" {
			if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return s, doc.Errorf(field("url"), "%q: want http:// or https:// and a host", c.URL)
			}
		}
		if c.File != "" {
			if err := checkFile(doc, field("file"), c.File, hosts); err != nil {
				return s, err
			}
			if c.Objects != nil {
				return s, doc.Errorf(field("objects"), "a cell fetches a page with objects or a file, not both")
			}
		}
		s.URL, s.File = c.URL, c.File
	case "ftp":
		if hosts && c.URL == "" {
			return s, doc.Errorf(at, "url is required with where: hosts (ftp://[user[:password]@]host[:port]/file)")
		}
		if !hosts && c.URL != "" {
			return s, doc.Errorf(field("url"), "only with where: hosts; the embedded server serves any size as a file name")
		}
		if c.URL != "" {
			if _, err := ParseFTPURL(c.URL); err != nil {
				return s, doc.Errorf(field("url"), "%v", err)
			}
		}
		if c.File != "" {
			if err := checkFile(doc, field("file"), c.File, hosts); err != nil {
				return s, err
			}
		}
		s.URL, s.File, s.Active = c.URL, c.File, c.Active
	case "imap":
		if hosts && c.URL == "" {
			return s, doc.Errorf(at, "url is required with where: hosts (imap://host[:port])")
		}
		if !hosts && (c.URL != "" || c.UserFormat != "" || c.Password != "") {
			f := "url"
			if c.URL == "" {
				f = map[bool]string{true: "user_format", false: "password"}[c.UserFormat != ""]
			}
			return s, doc.Errorf(field(f), "only with where: hosts; the embedded server has users user1…userN with its own password")
		}
		if c.URL != "" && !strings.HasPrefix(c.URL, "imap://") {
			return s, doc.Errorf(field("url"), "%q: want imap://host[:port]", c.URL)
		}
		if c.UserFormat != "" && strings.Count(c.UserFormat, "%d") != 1 {
			return s, doc.Errorf(field("user_format"), "%q must hold %%d once, for the user's number", c.UserFormat)
		}
		if c.Users != nil {
			if *c.Users < 1 || (!hosts && *c.Users > imap.DefaultUsers) {
				return s, doc.Errorf(field("users"), "%d: want 1 to %d (the embedded server's users)", *c.Users, imap.DefaultUsers)
			}
			s.Users = *c.Users
		}
		s.URL, s.UserFormat, s.Password = c.URL, c.UserFormat, c.Password
	case "smtp":
		if hosts && c.URL == "" {
			return s, doc.Errorf(at, "url is required with where: hosts (smtp://host[:port])")
		}
		if !hosts && c.URL != "" {
			return s, doc.Errorf(field("url"), "only with where: hosts; v6lab chooses the embedded server's address")
		}
		if c.URL != "" && !strings.HasPrefix(c.URL, "smtp://") {
			return s, doc.Errorf(field("url"), "%q: want smtp://host[:port]", c.URL)
		}
		for _, f := range []struct{ name, v string }{{"from", c.From}, {"to", c.To}} {
			if f.v != "" && (!strings.Contains(f.v, "@") || strings.ContainsAny(f.v, "<>\r\n ")) {
				return s, doc.Errorf(field(f.name), "%q is not a mail address", f.v)
			}
		}
		if c.Size != nil {
			if *c.Size < 0 || *c.Size > smtp.MaxMessage {
				return s, doc.Errorf(field("size"), "%d: want 0 to %d bytes", *c.Size, smtp.MaxMessage)
			}
			s.Size = *c.Size
		}
		s.URL, s.From, s.To, s.StartTLS = c.URL, c.From, c.To, c.StartTLS
	case "dns":
		if hosts && (c.Query == "" || len(c.DNSServers) == 0) {
			return s, doc.Errorf(at, "query and dns_servers are required with where: hosts (the name to look up and the server to ask)")
		}
		s.Query = c.Query
		switch c.Transport {
		case "", "udp", "tcp":
			s.Transport = c.Transport
		default:
			return s, doc.Errorf(field("transport"), "%q: want udp or tcp", c.Transport)
		}
		if err := CheckDNSMode(c.Mode, s.Transport == "tcp"); err != nil {
			return s, doc.Errorf(field("mode"), "%v", err)
		}
		s.Mode = c.Mode
	}
	if trial {
		o, err := c.trialOptions(doc, at, hosts)
		if err != nil {
			return s, err
		}
		s.Test, s.Servers = o, c.Servers
		// A trial's timeout follows its length unless set.
		if !doc.Has(field("timeout")) && !doc.Has("timeout") {
			s.Timeout = Duration(o.Omit + o.Duration + 30*time.Second)
		}
		if time.Duration(s.Timeout) <= o.Omit+o.Duration {
			return s, doc.Errorf(field("time"), "a trial of %v does not fit in its timeout of %v", o.Omit+o.Duration, time.Duration(s.Timeout))
		}
	}
	if c.Client != "" {
		if c.Client != "v6lab" && !slices.Contains(extclient.Programs, c.Client) {
			return s, doc.Errorf(field("client"), "%q: want v6lab, curl or wget", c.Client)
		}
		if c.Client != "v6lab" && c.File == "" && c.URL == "" {
			return s, doc.Errorf(field("client"), "%s downloads a file: give the cell a file (or, with where: hosts, a url)", c.Client)
		}
		if c.Client != "v6lab" && c.Active {
			return s, doc.Errorf(field("active"), "active mode is v6lab's own FTP client's option")
		}
		s.Client = c.Client
	}
	if err := c.congestion(doc, at, e.Where, &s); err != nil {
		return s, err
	}
	if len(c.DNSServers) > 0 && !hosts {
		return s, doc.Errorf(field("dns_servers"), "only with where: hosts; in the lab and on loopback the embedded DNS server answers")
	}
	for i, srv := range c.DNSServers {
		if _, err := path.ParseServer(srv); err != nil {
			return s, doc.Errorf(fmt.Sprintf("%s[%d]", field("dns_servers"), i), "%v", err)
		}
	}
	s.DNSServers = c.DNSServers
	return s, nil
}

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
		s.ServerCapture = true
	}
	return nil
}

// MaxRealHTTPFile bounds the files written for nginx (http file cells
// against the real server).
const MaxRealHTTPFile = 64 << 20

// RealServers are the real server programs per protocol, so far.
var RealServers = map[string]string{"http": "nginx", "dns": "unbound", "ftp": "proftpd", "smtp": "postfix", "imap": "dovecot"}

// RealServersFit says why a cell group cannot run against the real servers.
func RealServersFit(c *Spec) error {
	if _, ok := RealServers[c.Protocol]; !ok {
		return fmt.Errorf("no real server for %s in this version (real: nginx for http, unbound for dns, proftpd for ftp, postfix for smtp, dovecot for imap); use servers: embedded", c.Protocol)
	}
	if c.Protocol == "http" && (c.Objects != nil || c.Client != "") {
		return fmt.Errorf("with real servers an http cell fetches nginx's page or a file: objects and client need the embedded server")
	}
	if c.Protocol == "http" && c.File != "" {
		if n, err := units.ParseSize(strings.TrimPrefix(c.File, "/")); err != nil || n > MaxRealHTTPFile {
			return fmt.Errorf("nginx serves files v6lab writes to disk first: file %s is above %d MiB; use the embedded server, which generates them", c.File, MaxRealHTTPFile>>20)
		}
	}
	if c.Protocol == "smtp" && c.StartTLS {
		return fmt.Errorf("the real Postfix is set up without TLS: starttls needs servers: embedded or a real host")
	}
	if c.Protocol == "ftp" && c.Client != "" && c.Client != "v6lab" {
		return fmt.Errorf("with real servers an ftp cell uses v6lab's own client")
	}
	return nil
}

// checkFile checks a file cell's size name (the embedded servers generate
// files whose names are their sizes).
func checkFile(doc *specfile.Doc, field, file string, hosts bool) error {
	if hosts {
		return doc.Errorf(field, "with where: hosts the url names the file")
	}
	if n, err := units.ParseSize(strings.TrimPrefix(file, "/")); err != nil || n > ftp.MaxFileSize {
		return doc.Errorf(field, "%q: the embedded servers' files are sizes such as 1M, 64K or 5879824", file)
	}
	return nil
}

// trialOptions reads a tcp or udp cell's options and checks them as the
// server would.
func (c *cellFile) trialOptions(doc *specfile.Doc, at string, hosts bool) (*transport.Options, error) {
	field := func(f string) string { return at + "." + f }
	o := &transport.Options{Test: c.Protocol, Duration: time.Duration(c.Time), Omit: time.Duration(c.Omit), Interval: time.Duration(c.Interval),
		Congestion: c.Congestion, Reverse: c.Reverse}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Duration < 0 || o.Duration > transport.MaxDuration {
		return nil, doc.Errorf(field("time"), "%v: want more than 0 and at most %v", o.Duration, transport.MaxDuration)
	}
	if o.Omit < 0 || o.Omit > transport.MaxDuration-o.Duration {
		return nil, doc.Errorf(field("omit"), "%v: want 0 to %v (time and omit together at most %v)", o.Omit, transport.MaxDuration-o.Duration, transport.MaxDuration)
	}
	if o.Interval < 0 || (o.Interval > 0 && o.Interval < 10*time.Millisecond) {
		return nil, doc.Errorf(field("interval"), "%v: want at least 10ms", o.Interval)
	}
	size := func(name, v string, to *int) error {
		if v == "" {
			return nil
		}
		n, err := units.ParseSize(v)
		if err != nil || n <= 0 || n > transport.MaxBuffer {
			return doc.Errorf(field(name), "want bytes up to 256M, such as 64K, not %q", v)
		}
		*to = int(n)
		return nil
	}
	for _, f := range []struct {
		name, v string
		to      *int
	}{{"window", c.Window, &o.Window}, {"sndbuf", c.SndBuf, &o.SndBuf}, {"rcvbuf", c.RcvBuf, &o.RcvBuf}} {
		if err := size(f.name, f.v, f.to); err != nil {
			return nil, err
		}
	}
	if c.Bytes != "" {
		n, err := units.ParseSize(c.Bytes)
		if err != nil || n <= 0 || n > transport.MaxBytes {
			return nil, doc.Errorf(field("bytes"), "want an amount such as 10M or 200M, not %q", c.Bytes)
		}
		o.Bytes = n
		if o.Omit > 0 {
			return nil, doc.Errorf(field("omit"), "a warm-up is left out of a trial bound by its time, not of one that sends bytes")
		}
		if !doc.Has(field("time")) {
			o.Duration = 10 * time.Minute // the amount ends the trial; this bounds it
		}
	}
	if c.Streams != nil {
		if *c.Streams < 1 || *c.Streams > transport.MaxStreams {
			return nil, doc.Errorf(field("streams"), "%d: want 1 to %d", *c.Streams, transport.MaxStreams)
		}
		o.Streams = *c.Streams
	}
	if c.MSS != nil {
		if *c.MSS < 88 || *c.MSS > 65495 {
			return nil, doc.Errorf(field("mss"), "%d: want 88 to 65495 bytes", *c.MSS)
		}
		o.MSS = *c.MSS
	}
	rate := func(name, v string, to *uint64) error {
		if v == "" {
			return nil
		}
		r, err := units.ParseRate(v)
		if err != nil || r == 0 || r > transport.MaxRate {
			return doc.Errorf(field(name), "want a rate such as 10M, up to 100G, not %q", v)
		}
		*to = r
		return nil
	}
	if err := rate("bottleneck", c.Bottleneck, &o.Bottleneck); err != nil {
		return nil, err
	}
	if c.Protocol == "udp" {
		o.Rate, o.Size = 1e6, 1460
		if err := rate("rate", c.Rate, &o.Rate); err != nil {
			return nil, err
		}
		if c.Size != nil {
			if *c.Size < transport.MinDatagram || *c.Size > transport.MaxDatagram {
				return nil, doc.Errorf(field("size"), "%d: want %d to %d bytes", *c.Size, transport.MinDatagram, transport.MaxDatagram)
			}
			o.Size = *c.Size
		}
	}
	if o.Reverse {
		// The server samples a reverse test: hold it to the server's bounds.
		req := o.Request()
		if err := req.Check(); err != nil {
			return nil, doc.Errorf(field("reverse"), "%v", err)
		}
	}
	if hosts && len(c.Servers) == 0 {
		return nil, doc.Errorf(at, "servers is required with where: hosts (the v6lab transport servers, one per family)")
	}
	if !hosts && len(c.Servers) > 0 {
		return nil, doc.Errorf(field("servers"), "only with where: hosts; in the lab and on loopback the embedded server answers")
	}
	for i, a := range c.Servers {
		if _, err := ParseTransportServer(a); err != nil {
			return nil, doc.Errorf(fmt.Sprintf("%s[%d]", field("servers"), i), "%v", err)
		}
	}
	return o, nil
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
