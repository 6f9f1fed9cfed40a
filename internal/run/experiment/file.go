package experiment

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"v6lab/internal/gen/traffic"
	"v6lab/internal/input/specfile"
	"v6lab/internal/input/units"
	"v6lab/internal/lab"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/result"
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
	SampleEvery int        `yaml:"sample_every"`
	Cells       []cellFile `yaml:"cells"`
	// The file's cell of each group, and where it is (cells[i]): a cell
	// that lists values is a group per value (versions.go).
	groupCells []cellFile
	groupAt    []string
	// over are the paths a command line gives every cell group
	// (--paths): the file's are read, but the rules of paths apply to
	// these, and their errors name --paths.
	over []path.Path
}

type cellFile struct {
	Protocol string    `yaml:"protocol"`
	Label    string    `yaml:"label"`
	Conns    []int     `yaml:"conns"`
	Paths    []string  `yaml:"paths"`
	Runs     *int      `yaml:"runs"`
	Warmup   *int      `yaml:"warmup"`
	Timeout  *Duration `yaml:"timeout"`
	Pause    *Duration `yaml:"pause"`
	Duration Duration  `yaml:"duration"`
	// embedded or real: overrides the experiment's servers for this cell
	Server string `yaml:"server"`
	// congestion (any protocol, in the lab)
	Background    string `yaml:"background"`
	ServerCapture bool   `yaml:"server_capture"`
	// link_rate: the lab's links reshaped for this cell group's runs
	LinkRate string `yaml:"link_rate"`
	// ipv6_loss: the client's IPv6 dropped at r1 (percent; 100: blackholed)
	IPv6Loss *float64 `yaml:"ipv6_loss"`
	// ipv6_udp_loss: the client's IPv6 UDP but DNS dropped at r1 (percent;
	// 100: QUIC blocked over IPv6 only)
	IPv6UDPLoss *float64 `yaml:"ipv6_udp_loss"`
	// ipv6_delay: IPv6 toward the client held this long at r1 (netem)
	IPv6Delay string `yaml:"ipv6_delay"`
	// ptb_blackhole, fragments, tcp_mtu_probing, mss_clamp: path MTU
	// discovery broken or mitigated for the group's runs (lab.PMTU)
	PTBBlackhole *string `yaml:"ptb_blackhole"`
	Fragments    *string `yaml:"fragments"`
	MTUProbing   *int    `yaml:"tcp_mtu_probing"`
	MSSClamp     *bool   `yaml:"mss_clamp"`
	// loss: every packet between the routers dropped (percent), each way
	Loss *float64 `yaml:"loss"`
	// Options are the keys left: the protocol's options, decoded into its
	// own struct once the protocol is known.
	Options specfile.Rest `yaml:",rest"`
	// expanded: the group is one value of a list the cell gave (its
	// HTTP versions: versions.go).
	expanded bool
	// list: the versions the cell listed, when expanded.
	list *versionList
}

// BuiltinLab prefixes a topology that names a lab built into v6lab
// (experiments/labs): what run --print writes for a study's lab.
const BuiltinLab = "built-in:"

// Defaults of an experiment file.
const (
	DefaultRuns    = 11
	DefaultWarmup  = 1
	DefaultTimeout = 30 * time.Second
	DefaultPause   = 100 * time.Millisecond
	// MaxConns bounds one cell's simultaneous connections per path.
	MaxConns = 100000
)

// cellFields are the fields of a cell group every protocol has.
func cellFields() []string {
	var out []string
	t := reflect.TypeFor[cellFile]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// owner names the protocols whose options include key, for the error of
// an option given to a protocol that does not take it.
func owner(key string) []string {
	var out []string
	for _, p := range all.List {
		if slices.Contains(p.Options(), key) {
			out = append(out, p.Name)
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
func Load(name string) (*Experiment, error) { return LoadPaths(name, nil) }

// LoadPaths reads an experiment file whose every cell group measures
// paths instead of the file's (run --paths; nil: the file's), checked as
// such before any rule of paths applies.
func LoadPaths(name string, paths []path.Path) (*Experiment, error) {
	data, err := specfile.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	e, err := ParsePaths(name, data, paths)
	if err != nil {
		return nil, err
	}
	// A built-in lab (experiments.BuiltinLab) is the CLI's to find.
	if e.Topology != "" && !filepath.IsAbs(e.Topology) && !strings.HasPrefix(e.Topology, BuiltinLab) {
		e.Topology = filepath.Join(filepath.Dir(name), e.Topology)
	}
	if e.Topology != "" && !strings.HasPrefix(e.Topology, BuiltinLab) {
		if _, err := lab.LoadTopology(e.Topology); err != nil {
			return nil, topologyError(name, e, err)
		}
	}
	return e, nil
}

// topologyError names the experiment file and line whose topology could
// not be read (it does not exist, or is not a file); an error inside the
// topology file names that file's own line.
func topologyError(name string, e *Experiment, err error) error {
	var inTopology *specfile.Error
	if errors.As(err, &inTopology) && inTopology.File == e.Topology && inTopology.Line > 0 {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "lab: topology: ")
	return &specfile.Error{File: name, Line: e.topologyLine, Field: "topology", Msg: msg}
}

// Parse reads an experiment from data, the contents of file name.
func Parse(name string, data []byte) (*Experiment, error) { return ParsePaths(name, data, nil) }

// ParsePaths is Parse with every cell group's paths given (LoadPaths).
func ParsePaths(name string, data []byte, paths []path.Path) (*Experiment, error) {
	f := file{over: paths}
	doc, err := specfile.Decode(name, data, &f)
	if err != nil {
		return nil, err
	}
	return f.experiment(doc)
}

func (f *file) experiment(doc *specfile.Doc) (*Experiment, error) {
	e := &Experiment{Name: f.Name, Description: f.Description, Where: result.Auto, Topology: f.Topology,
		Servers: f.Servers, Order: f.Order, Seed: f.Seed, topologyLine: doc.Line("topology")}
	if err := f.settings(doc, e); err != nil {
		return nil, err
	}
	paths, err := f.pathsAndBaseline(doc, e)
	if err != nil {
		return nil, err
	}
	base := CellGroup{Name: f.Name, Runs: DefaultRuns, Warmup: DefaultWarmup, Timeout: Duration(DefaultTimeout),
		Pause: Duration(DefaultPause), Baseline: e.Baseline}
	if err := runSettings(doc, "", &base, f.Runs, f.Warmup, f.Timeout, f.Pause); err != nil {
		return nil, err
	}
	if err := f.groups(doc, e, base, paths); err != nil {
		return nil, err
	}
	if err := f.realServers(doc, e); err != nil {
		return nil, err
	}
	if err := e.CheckSampleEvery(false); err != nil {
		return nil, doc.Errorf("sample_every", "%v", err)
	}
	if err := e.Validate(); err != nil { // rules that belong to no one field
		if f.over != nil {
			if fe := FlagError(err, func(f string) bool { return f == "paths" }); fe != err {
				return nil, fe
			}
		}
		return nil, fmt.Errorf("%s: %w", doc.File, err)
	}
	return e, nil
}

// settings reads the experiment's own fields: its name, where it runs,
// and what it asks of the lab, the client and the servers.
func (f *file) settings(doc *specfile.Doc, e *Experiment) error {
	switch {
	case !doc.Has("name"):
		return doc.Errorf("name", "is required")
	case CheckName(f.Name) != nil:
		return doc.Errorf("name", "%v", CheckName(f.Name))
	}
	if doc.Has("where") {
		w, err := result.ParseWhere(f.Where)
		if err != nil {
			return doc.Errorf("where", "%v", err)
		}
		if w == result.Sites {
			return doc.Errorf("where", "sites is a survey's: a survey file lists its sites and their options, not cells (v6lab survey FILE; docs/survey.md)")
		}
		e.Where = w
	}
	if f.Topology != "" && e.Where.OffLab() {
		return doc.Errorf("topology", "a topology needs the lab, but where is %s", e.Where)
	}
	if doc.Has("congestion") {
		switch {
		case !congestionRE.MatchString(f.Congestion):
			return doc.Errorf("congestion", "%q is not a congestion control name (cubic, reno, bbr, …)", f.Congestion)
		case e.Where.OffLab():
			return doc.Errorf("congestion", "%s sets the TCP congestion control of the lab's hosts, but where is %s: no lab is built (remove it; on other hosts, set net.ipv4.tcp_congestion_control there)", f.Congestion, e.Where)
		}
		e.Congestion = f.Congestion
		e.congestionAt = &specfile.Error{File: doc.File, Line: doc.Line("congestion"), Field: "congestion"}
	}
	if f.Spin != nil {
		if err := CheckSpin(time.Duration(*f.Spin)); err != nil {
			return doc.Errorf("spin", "%v", err)
		}
		e.Spin = f.Spin
	}
	if e.SampleEvery = f.SampleEvery; f.SampleEvery < 0 || f.SampleEvery > MaxSampleEvery {
		return doc.Errorf("sample_every", "%d: want 1 (every sample) to %d", f.SampleEvery, MaxSampleEvery)
	}
	switch e.Servers = proto.Or(e.Servers, "embedded"); e.Servers {
	case "embedded":
	case "real":
		if e.Where.OffLab() {
			return doc.Errorf("servers", "real servers run in the lab's server host, but where is %s", e.Where)
		}
	default:
		return doc.Errorf("servers", "%q: want embedded or real", f.Servers)
	}
	if e.Order = proto.Or(e.Order, OrderInterleaved); e.Order != OrderInterleaved && e.Order != OrderShuffled {
		return doc.Errorf("order", "%q: want interleaved or shuffled", f.Order)
	}
	return nil
}

// pathsAndBaseline reads the experiment's paths (default: ipv4, ipv6 and,
// in the lab, 6in4) and its baseline (default ipv4).
func (f *file) pathsAndBaseline(doc *specfile.Doc, e *Experiment) ([]path.Path, error) {
	paths, err := f.paths(doc, "paths", f.Paths, f.pathsWhere(e.Where))
	if err != nil {
		return nil, err
	}
	if f.over != nil {
		paths = f.over
	}
	if paths == nil {
		paths = []path.Path{path.IPv4, path.IPv6, path.SixIn4}
		if e.Where.OffLab() {
			paths = paths[:2]
		}
	}
	e.Baseline = path.IPv4
	if doc.Has("baseline") {
		if e.Baseline, err = path.Parse(f.Baseline); err != nil {
			return nil, doc.Errorf("baseline", "%q is not a path (%s)", f.Baseline, path.Names())
		}
	}
	if f.over != nil && !slices.Contains(paths, e.Baseline) {
		e.Baseline = paths[0] // as Experiment.Override does
	}
	return paths, nil
}

// pathsWhere is where the file's own paths are checked for: nowhere in
// particular (result.Auto) when the command line gives the paths.
func (f *file) pathsWhere(where result.Where) result.Where {
	if f != nil && f.over != nil {
		return result.Auto
	}
	return where
}

// groups reads the cell groups: each its own, named apart from the
// others, and measuring the baseline.
func (f *file) groups(doc *specfile.Doc, e *Experiment, base CellGroup, paths []path.Path) error {
	if len(f.Cells) == 0 {
		return doc.Errorf("cells", "at least one cell is needed (protocol and connection counts)")
	}
	labels, titles := map[string]string{}, map[string]titled{}
	for i, cell := range f.Cells {
		at := fmt.Sprintf("cells[%d]", i)
		cells, err := cell.versions(doc)
		if err != nil {
			return err
		}
		for _, c := range cells {
			s, err := c.spec(doc, at, base, paths, f, e)
			if err != nil {
				return err
			}
			if prev, dup := labels[s.CellName()]; dup {
				field := at + ".label"
				if !doc.Has(field) {
					field = at + ".protocol"
				}
				return doc.Errorf(field, "%s is also the name of %s: give one a distinct label", s.CellName(), prev)
			}
			labels[s.CellName()] = at
			if err := sameTitle(doc, titles, &s, at); err != nil {
				return err
			}
			if !slices.Contains(s.Paths, e.Baseline) {
				field := at + ".paths"
				if !doc.Has(field) {
					field = "baseline"
				}
				return doc.Errorf(field, "the cell does not measure the baseline path %s, so nothing can be compared with it", e.Baseline)
			}
			e.Groups = append(e.Groups, s)
			f.groupCells, f.groupAt = append(f.groupCells, c), append(f.groupAt, at)
		}
	}
	return nil
}

// titled is the cell (cells[i]) and the group of it that has a title.
type titled struct{ at, group string }

// sameTitle refuses a group whose tables' title (CellGroup.Title) another
// cell's group has already: label http with http_version 2 and the http/2
// of a list are both "HTTP/2", and the reports could not tell them apart.
func sameTitle(doc *specfile.Doc, titles map[string]titled, s *CellGroup, at string) error {
	title := s.Title()
	prev, dup := titles[title]
	if !dup {
		titles[title] = titled{at, s.CellName()}
		return nil
	}
	field := at + ".label"
	if !doc.Has(field) {
		field = at + "." + versionKey
	}
	return doc.Errorf(field, "the group %s would be titled %s in every table, as %s's group %s (line %d) is, and the reports could not tell them apart: give one of the cells a distinct label",
		s.CellName(), title, prev.at, prev.group, doc.Line(prev.at))
}

// realServers marks the groups that measure real servers (the
// experiment's servers, or a group's own), if each can.
func (f *file) realServers(doc *specfile.Doc, e *Experiment) error {
	for i := range e.Groups {
		c := &e.Groups[i]
		at := f.groupAt[i]
		switch proto.Or(f.groupCells[i].Server, e.Servers) {
		case "embedded":
			continue
		case "real":
		default:
			return doc.Errorf(at+".server", "%q: want embedded or real", f.groupCells[i].Server)
		}
		if e.Where.OffLab() {
			return doc.Errorf(at+".server", "real servers run in the lab's server host, but where is %s", e.Where)
		}
		if err := RealServersFit(c); err != nil {
			field := at + ".server"
			if !doc.Has(field) {
				field = at
			}
			return doc.Errorf(field, "%v", err)
		}
		c.Server = "real"
	}
	return nil
}

// paths reads a list of paths at field; nil when the file gave none.
func (f *file) paths(doc *specfile.Doc, field string, in []string, where result.Where) ([]path.Path, error) {
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
		if where.OffLab() {
			if err := p.OffLab("where: " + string(where)); err != nil {
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
func runSettings(doc *specfile.Doc, prefix string, s *CellGroup, runs, warmup *int, timeout, pause *Duration) error {
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
		if err := checkPause(time.Duration(*pause)); err != nil {
			return doc.Errorf(at("pause"), "%v", err)
		}
		s.Pause = *pause
	}
	return nil
}

func (c *cellFile) spec(doc *specfile.Doc, at string, base CellGroup, paths []path.Path, f *file, e *Experiment) (CellGroup, error) {
	s := base
	s.Protocol, s.Label = c.Protocol, c.Label
	r := &cellReader{doc: doc, at: at, e: e, c: c, s: &s, over: f.over, fileRaw: f.Paths}
	for _, step := range []func() error{r.protocol, r.conns, func() error { return r.paths(paths) }, r.runSettings, r.options, r.trialTimeout,
		func() error { return c.congestion(doc, at, e.Where, r.pr, &s) }, r.impairments} {
		if err := step(); err != nil {
			return s, err
		}
	}
	return s, nil
}

// cellReader reads one cell group of a file, step by step.
type cellReader struct {
	doc *specfile.Doc
	at  string // cells[i]
	e   *Experiment
	c   *cellFile
	s   *CellGroup
	pr  *proto.Protocol
	// own: the group gave paths of its own (errors name them there).
	own bool
	// over are the command line's paths (file.over); fileRaw the
	// file's own, as written (its errors blame --paths when the file's
	// paths would have passed).
	over    []path.Path
	fileRaw []string
}

func (r *cellReader) field(f string) string { return r.at + "." + f }

// pathErr is err of the group's path i, said where the path was given:
// the group's paths, the file's, or --paths.
func (r *cellReader) pathErr(i int, err error) error {
	if r.over != nil {
		return fmt.Errorf("--paths: %w (%s)", err, r.s.CellName())
	}
	return r.doc.Errorf(r.pathAt(i), "%v", err)
}

// pathAt names paths[i] where it was given: the group's, or the file's.
func (r *cellReader) pathAt(i int) string {
	if !r.own {
		return fmt.Sprintf("paths[%d]", i)
	}
	return fmt.Sprintf("%s[%d]", r.field("paths"), i)
}

// protocol reads the protocol, the label, and the protocol's options into
// its own struct (an option of another protocol named as such).
func (r *cellReader) protocol() error {
	c, doc := r.c, r.doc
	pr, ok := all.Get(c.Protocol)
	switch {
	case !doc.Has(r.field("protocol")):
		return doc.Errorf(r.at, "protocol is required (%s)", all.NameList("or"))
	case !ok:
		return doc.Errorf(r.field("protocol"), "%q is not a protocol v6lab knows (%s)", c.Protocol, strings.Join(all.Names(), ", "))
	}
	if doc.Has(r.field("label")) && !labelRE.MatchString(c.Label) {
		return doc.Errorf(r.field("label"), "%q: lowercase letters, digits, dot, dash and underscore, up to 32", c.Label)
	}
	r.pr, r.s.Options = pr, pr.New()
	return doc.DecodeRest(c.Options, r.s.Options, func(key string) string {
		if by := owner(key); len(by) > 0 {
			return fmt.Sprintf("does not apply to protocol %s: %s is an option of %s (%s takes: %v)", c.Protocol, key, strings.Join(by, " and "), c.Protocol, pr.Options())
		}
		known := append(cellFields(), pr.Options()...)
		slices.Sort(known)
		return specfile.UnknownField(key, known)
	})
}

// conns reads the connection counts ([1] for a trial, which is one test).
func (r *cellReader) conns() error {
	c, doc, field := r.c, r.doc, r.field("conns")
	switch trial := r.pr.SingleTest; {
	case trial && !doc.Has(field):
		c.Conns = []int{1}
	case trial && (len(c.Conns) != 1 || c.Conns[0] != 1):
		return doc.Errorf(field, "a %s trial is one test: conns must be [1] (use streams for parallel connections)", c.Protocol)
	case !doc.Has(field):
		return doc.Errorf(r.at, "conns is required (simultaneous connections per run, e.g. [1, 10, 100])")
	}
	if i, err := checkConns(c.Conns); err != nil {
		if i < 0 {
			return doc.Errorf(field, "%v", err)
		}
		return doc.Errorf(fmt.Sprintf("%s[%d]", field, i), "%v", err)
	}
	r.s.Conns = c.Conns
	return nil
}

// paths reads the group's paths (the file's unless its own), each one its
// protocol can race when it is dual.
func (r *cellReader) paths(fileWide []path.Path) error {
	f := &file{over: r.over}
	own, err := f.paths(r.doc, r.field("paths"), r.c.Paths, f.pathsWhere(r.e.Where))
	if err != nil {
		return err
	}
	r.s.Paths, r.own = slices.Clone(fileWide), own != nil && r.over == nil // each group's own: callers edit them
	if r.own {
		r.s.Paths = own
	}
	for i, p := range r.s.Paths {
		if err := DualFits(p, r.c.Protocol); err != nil {
			return r.pathErr(i, err)
		}
	}
	return nil
}

// runSettings reads runs, warm-up, timeout, pause and duration.
func (r *cellReader) runSettings() error {
	c := r.c
	if err := runSettings(r.doc, r.at+".", r.s, c.Runs, c.Warmup, c.Timeout, c.Pause); err != nil {
		return err
	}
	if err := checkDuration(time.Duration(c.Duration)); err != nil {
		return r.doc.Errorf(r.field("duration"), "%v", err)
	}
	r.s.Duration = c.Duration
	return nil
}

// options checks the protocol's options (the protocol's rules, its path
// rules), and names a group of the protocol's other server after it.
func (r *cellReader) options() error {
	doc, s := r.doc, r.s
	s.Options.Base().RacesFamilies = s.RacesFamilies() // its dual path's options count
	if err := s.Options.Check(r.e.Where, func(o string) bool { return doc.Has(r.field(o)) }); err != nil {
		oe, ok := proto.AsOptionError(err)
		switch {
		case r.pathsFlagBroke():
			return r.pathsFlagErr("", err)
		case !ok:
			return doc.Errorf(r.at, "%v", err)
		case oe.Option == "":
			return doc.Errorf(r.at, "%v", oe.Err)
		}
		if err := r.listedErr(oe); err != nil {
			return err
		}
		return doc.Errorf(r.field(oe.Option), "%v", oe.Err)
	}
	for i, p := range s.Paths {
		if err := r.pathFit(p); err != nil {
			if r.over != nil {
				return r.pathsFlagErr(p, err)
			}
			if oe, ok := proto.AsOptionError(err); ok && oe.Option != "" {
				return doc.Errorf(r.field(oe.Option), "%v", oe.Err)
			}
			return r.pathErr(i, err)
		}
	}
	if n := r.name(); n != proto.Or(s.Label, s.Protocol) {
		s.Label = n // https, v3, http/2, http/3
	}
	return r.keptWarmup()
}

// pathFit checks the options over path p: the protocol's path rules and,
// where: hosts, that the host the url names is reachable over p (an IP
// literal of p's family; resolve: giving an address of it), which would
// otherwise fail every run (proto.HostFitter).
func (r *cellReader) pathFit(p path.Path) error {
	if err := r.s.Options.PathFit(r.e.Where, p); err != nil {
		return err
	}
	if h, ok := r.s.Options.(proto.HostFitter); ok && r.e.Where == result.Hosts {
		return h.HostFit(p)
	}
	return nil
}

// pathsFlagBroke says whether the options a file gave a cell pass their
// check over the paths the file gave it, and so fail over those --paths
// gave it (a dual path: an option that cannot race).
func (r *cellReader) pathsFlagBroke() bool {
	b := r.s.Options.Base()
	given := r.fileRaw
	if r.doc.Has(r.field("paths")) {
		given = r.c.Paths
	}
	fileRaces := slices.ContainsFunc(given, func(s string) bool { p, err := path.Parse(s); return err == nil && p.Kind().Dual })
	if r.over == nil || b.RacesFamilies == fileRaces {
		return false
	}
	races := b.RacesFamilies
	b.RacesFamilies = fileRaces // the file's paths are checked before --paths'
	err := r.s.Options.Check(r.e.Where, func(o string) bool { return r.doc.Has(r.field(o)) })
	b.RacesFamilies = races
	return err == nil
}

// pathsFlagErr blames path p of --paths for err, naming the file's cell
// as the file's own paths name it and the option that cannot go over p
// (as it stands in the file); p "": the dual path --paths gave, or left
// out, for an option that races (or must).
func (r *cellReader) pathsFlagErr(p path.Path, err error) error {
	what := ""
	if oe, ok := proto.AsOptionError(err); ok && oe.Option != "" {
		if f, ok := proto.FieldOf(r.s.Options, oe.Option); ok {
			what = fmt.Sprintf(" (%s %s)", oe.Option, f.Text())
		}
		err = oe.Err
	}
	b := r.s.Options.Base()
	races := b.RacesFamilies
	if p == "" {
		b.RacesFamilies = !races // as the file's paths have it
	}
	name := r.name()
	b.RacesFamilies = races
	switch {
	case p != "":
	case races:
		p = path.Dual
	default:
		return fmt.Errorf("--paths: %s: no %s path, which %s's cell %s%s needs: %v", joinPaths(r.over), path.Dual, r.doc.File, name, what, err)
	}
	return fmt.Errorf("--paths: %s: %s's cell %s%s cannot run over it: %v", p, r.doc.File, name, what, err)
}

// name is what the cell group is called once read: its label; unlabelled,
// its server's (a cell of the protocol's other server, https) or its
// dialer's (raceName); with a version, the version's (http/2, web/3).
func (r *cellReader) name() string {
	s := r.s
	name := s.Label
	if k := all.CellServerKey(r.c.Protocol, s.Options); name == "" && k != all.ServerKey(r.c.Protocol) {
		name = raceName(s, k)
	}
	if label, ok := r.c.versionLabel(s.Options); ok {
		name = label
	}
	return proto.Or(name, s.Protocol)
}

func joinPaths(ps []path.Path) string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p))
	}
	return strings.Join(out, ",")
}

// raceName is the name of an unlabelled cell of server k: k, unless k is
// the server its dual path's race asks for and its pinned paths speak
// another version to (dialer v3 naming no http_version: HTTP/1.1 over TLS
// on ipv4, whatever wins on dual). Such a cell is named after its dialer
// (v3), which says what it races, not a version only one row speaks.
func raceName(s *CellGroup, k string) string {
	pinned := s.pinnedKey()
	d, ok := proto.FieldOf(s.Options, optDialer)
	if pinned == k || !ok || d.Text() == "" {
		return k
	}
	return d.Text()
}

// keptWarmup refuses keepalive without a warm-up run, naming the warm-up
// where the file gave it (the cell's, the file's), else the keepalive.
func (r *cellReader) keptWarmup() error {
	err := checkKeptWarmup(r.s.Warmup, time.Duration(r.s.Duration), r.s.Options)
	if err == nil {
		return nil
	}
	field := r.field("warmup")
	switch {
	case r.doc.Has(field):
	case r.doc.Has("warmup"):
		field = "warmup"
	default:
		field = r.field(optKeepalive)
	}
	return r.doc.Errorf(field, "%v", err)
}

// trialTimeout: a trial's timeout follows its length unless set, and
// must hold it.
func (r *cellReader) trialTimeout() error {
	length := r.s.Options.Length()
	if !r.pr.SingleTest {
		return nil
	}
	if !r.doc.Has(r.field("timeout")) && !r.doc.Has("timeout") {
		r.s.Timeout = Duration(length + 30*time.Second)
	}
	if time.Duration(r.s.Timeout) <= length {
		return r.doc.Errorf(r.field("time"), "a trial of %v does not fit in its timeout of %v", length, time.Duration(r.s.Timeout))
	}
	return nil
}

// impairments reads what the lab's router does to the client's IPv6
// during the group's runs: loss, delay.
func (r *cellReader) impairments() error {
	c, doc, s, where := r.c, r.doc, r.s, r.e.Where
	if c.IPv6Loss != nil {
		switch v := *c.IPv6Loss; {
		case !(v > 0 && v <= 100):
			return doc.Errorf(r.field("ipv6_loss"), "%g is not a share of IPv6 packets to drop: want more than 0 and at most 100 (percent; 100: blackholed)", v)
		case where.OffLab():
			return doc.Errorf(r.field("ipv6_loss"), "IPv6 is dropped at the lab's router, but where is %s", where)
		}
		s.IPv6Loss = *c.IPv6Loss
	}
	if c.IPv6UDPLoss != nil {
		switch v := *c.IPv6UDPLoss; {
		case !(v > 0 && v <= 100):
			return doc.Errorf(r.field("ipv6_udp_loss"), "%g is not a share of IPv6 UDP datagrams to drop: want more than 0 and at most 100 (percent; 100: QUIC blocked over IPv6)", v)
		case where.OffLab():
			return doc.Errorf(r.field("ipv6_udp_loss"), "IPv6 UDP is dropped at the lab's router, but where is %s", where)
		case c.IPv6Loss != nil:
			return doc.Errorf(r.field("ipv6_udp_loss"), "give ipv6_loss (all of IPv6) or ipv6_udp_loss (its UDP but DNS), not both")
		}
		s.IPv6UDPLoss = *c.IPv6UDPLoss
	}
	if c.Loss != nil {
		switch v := *c.Loss; {
		case lab.CheckLoss(v) != nil:
			return doc.Errorf(r.field("loss"), "%v", lab.CheckLoss(v))
		case where.OffLab():
			return doc.Errorf(r.field("loss"), "packets are dropped between the lab's routers, but where is %s", where)
		}
		s.Loss = *c.Loss
	}
	if c.IPv6Delay != "" {
		d, err := time.ParseDuration(c.IPv6Delay)
		switch {
		case err != nil || d <= 0 || d > MaxIPv6Delay:
			return doc.Errorf(r.field("ipv6_delay"), "want a delay such as 50ms, more than 0 and at most %v, not %q", MaxIPv6Delay, c.IPv6Delay)
		case where.OffLab():
			return doc.Errorf(r.field("ipv6_delay"), "IPv6 is delayed at the lab's router, but where is %s", where)
		case c.LinkRate != "":
			return doc.Errorf(r.field("ipv6_delay"), "cannot be combined with link_rate in one cell group (one qdisc tree on r1's link)")
		}
		s.IPv6Delay = Duration(d)
	}
	return r.pmtu()
}

// pmtu reads what the lab's routers and hosts do to path MTU discovery
// and fragments during the group's runs (lab.PMTU).
func (r *cellReader) pmtu() error {
	c, doc, s, where := r.c, r.doc, r.s, r.e.Where
	for _, v := range []struct {
		field string
		value *string
		check func(string) error
		set   *string
	}{
		{"ptb_blackhole", c.PTBBlackhole, lab.CheckPTBBlackhole, &s.PMTU.PTBBlackhole},
		{"fragments", c.Fragments, lab.CheckFragments, &s.PMTU.Fragments},
	} {
		if v.value == nil {
			continue
		}
		if err := v.check(*v.value); err != nil {
			return doc.Errorf(r.field(v.field), "%v", err)
		}
		*v.set = *v.value
	}
	if c.MTUProbing != nil {
		if err := lab.CheckMTUProbing(*c.MTUProbing); err != nil {
			return doc.Errorf(r.field("tcp_mtu_probing"), "%v", err)
		}
		v := *c.MTUProbing
		s.PMTU.MTUProbing = &v
	}
	if c.MSSClamp != nil {
		s.PMTU.MSSClamp = *c.MSSClamp
	}
	if where.OffLab() {
		for _, f := range []string{"ptb_blackhole", "fragments", "tcp_mtu_probing", "mss_clamp"} {
			if doc.Has(r.field(f)) {
				return doc.Errorf(r.field(f), "sets the lab's routers and hosts, but where is %s", where)
			}
		}
	}
	return nil
}

// MaxIPv6Delay bounds ipv6_delay: longer is a blackhole, which ipv6_loss: 100 is.
const MaxIPv6Delay = 10 * time.Second

// congestion reads background and server_capture, which need the lab.
func (c *cellFile) congestion(doc *specfile.Doc, at string, where result.Where, pr *proto.Protocol, s *CellGroup) error {
	field := func(f string) string { return at + "." + f }
	inLab := !where.OffLab()
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
		if !pr.ServerCapture {
			return doc.Errorf(field("server_capture"), "server-side figures are computed for %s cells (from the GET to the client's last ACK), not %s", all.Captured(), c.Protocol)
		}
		if !inLab {
			return doc.Errorf(field("server_capture"), "the capture runs in the lab's server host, but where is %s", where)
		}
		if s.Options.ServerFor() != "" {
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
			return doc.Errorf(field("link_rate"), "%s reshapes the lab's links, but where is %s: no lab is built (remove it)", c.LinkRate, where)
		}
		s.LinkRate = r
		s.linkRateAt = &specfile.Error{File: doc.File, Line: doc.Line(field("link_rate")), Field: field("link_rate")}
	}
	return nil
}

// RealServersFit says why a cell group cannot run against the real servers.
func RealServersFit(c *CellGroup) error { return all.RealFit(c.Protocol, c.Options) }

// Scale shrinks an experiment for a quick look on a small machine: every
// connection count, the number of runs, and a trial's length and amount of
// data are multiplied by f (0 < f ≤ 1), keeping at least one connection, two
// counted runs, one second and 1 MiB per cell.
func (e *Experiment) Scale(f float64) error {
	if !(f > 0 && f <= 1) {
		return fmt.Errorf("%g: want more than 0 and at most 1", f)
	}
	e.Scaled = f // recorded with the spec in every result's header
	for i := range e.Groups {
		c := &e.Groups[i]
		var conns []int
		for _, n := range c.Conns {
			m := max(1, int(math.Round(float64(n)*f)))
			if !slices.Contains(conns, m) {
				conns = append(conns, m)
			}
		}
		c.Conns = conns
		c.Runs = max(c.Warmup+2, int(math.Round(float64(c.Runs)*f)))
		c.Opts().Scale(f) // files get smaller, trials shorter and carry less
		if length := c.Opts().Length(); length > 0 {
			c.Timeout = Duration(length + 30*time.Second)
		}
	}
	return nil
}
