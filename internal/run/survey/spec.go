package survey

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"v6lab/internal/input/specfile"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
)

// Spec is a survey as it runs and as its result's header records it: its
// name, the list (its path, count of sites and digest: segments of one
// survey read one list) and its options, flat beside them.
type Spec struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Where       result.Where `json:"where"`
	Sites       string       `json:"sites"`
	SitesCount  int          `json:"sites_count"`
	SitesSHA256 string       `json:"sites_sha256"`
	Options
}

// surveyFile is a survey file's YAML (docs/survey.md): the options are the
// keys left, decoded by their opt tags.
type surveyFile struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	Where       string        `yaml:"where"`
	Sites       string        `yaml:"sites"`
	Options     specfile.Rest `yaml:",rest"`
}

// IsFile says whether arg names a survey file rather than a list.
func IsFile(arg string) bool {
	ext := strings.ToLower(filepath.Ext(arg))
	return ext == ".yaml" || ext == ".yml"
}

// LoadFile reads a survey file: every problem an error naming the file,
// the line and the field. Its list and exclusion list are relative to
// the file.
func LoadFile(name string) (*Spec, error) {
	data, err := specfile.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("survey: %w", err)
	}
	var f surveyFile
	doc, err := specfile.Decode(name, data, &f)
	if err != nil {
		return nil, err
	}
	switch {
	case !doc.Has("name"):
		return nil, doc.Errorf("name", "is required")
	case experiment.CheckName(f.Name) != nil:
		return nil, doc.Errorf("name", "%v", experiment.CheckName(f.Name))
	case f.Where != string(result.Sites):
		return nil, doc.Errorf("where", "a survey file says where: sites (it has %q); an experiment file runs with v6lab run", f.Where)
	case f.Sites == "":
		return nil, doc.Errorf("sites", "is required: the list of sites (one name a line, or Tranco's rank,name CSV)")
	}
	sp := &Spec{Name: f.Name, Description: f.Description, Where: result.Sites, Sites: f.Sites, Options: *Defaults()}
	if !filepath.IsAbs(sp.Sites) {
		sp.Sites = filepath.Join(filepath.Dir(name), sp.Sites)
	}
	if err := doc.DecodeRest(f.Options, &sp.Options, func(string) string { return "" }); err != nil {
		return nil, err
	}
	if x := sp.Exclude; x != "" && !filepath.IsAbs(x) {
		sp.Exclude = filepath.Join(filepath.Dir(name), x)
	}
	if err := sp.Options.Check(); err != nil {
		if oe, ok := proto.AsOptionError(err); ok && oe.Option != "" {
			return nil, doc.Errorf(oe.Option, "%v", oe.Err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return sp, nil
}

// NewSpec is a survey of list named name (its list's base name, when
// empty) with options o.
func NewSpec(name, list string, o Options) (*Spec, error) {
	if name == "" {
		base := filepath.Base(list)
		name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if err := experiment.CheckName(name); err != nil {
		return nil, fmt.Errorf("survey: name %q: %w (give --name)", name, err)
	}
	return &Spec{Name: name, Where: result.Sites, Sites: list, Options: o}, nil
}

// Help is v6lab survey's help text.
const Help = `survey measures every site a list names (one name a line, or a CSV whose first
column is the name, or Tranco's rank,name): its A and AAAA lookups, then for a
dual-stacked site page fetches pinned to each family, interleaved (ipv4 then ipv6, then
ipv6 then ipv4, ...) --runs times (TCP connect, TLS handshake, first byte and the page
with its objects on its own host), and its objects on other hosts fetched over each
family. Each site gets a verdict: ipv6_faster, same or ipv6_slower (the 95% CI of the
paired difference against --threshold), undecided, partial (an object or part that fails
over one family only), ipv6_broken, no_aaaa, ... in report.txt, results.csv (one row per
site), summary.json and report.html. Every raw sample is kept.

Be polite: every request's User-Agent names v6lab and your --contact; --site-conns bounds
the connections to one site, --rate the connections per second over all, --exclude names
sites never to contact; every request is bounded by --timeout.

--lab-sites FILE surveys a lab of sites with known answers instead (docs/survey.md): the
sites FILE lists, served on loopback in a network namespace this command makes (root, or
a user namespace), with the properties the file gives them; SITES defaults to FILE.`

// ParseSplit reads --segment I/N and --start-at TIME (either may be "").
func ParseSplit(segment, startAt string) (*result.Segment, time.Time, error) {
	var seg *result.Segment
	var at time.Time
	var err error
	if segment != "" {
		if seg, err = result.ParseSegment(segment); err != nil {
			return nil, at, fmt.Errorf("--segment %q: %w", segment, err)
		}
	}
	if startAt != "" {
		if at, err = time.Parse(time.RFC3339Nano, startAt); err != nil {
			return nil, at, fmt.Errorf("--start-at %q: not an RFC 3339 time such as 2026-11-24T10:00:00Z", startAt)
		}
	}
	return seg, at, nil
}
