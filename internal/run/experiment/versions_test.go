package experiment

import (
	"slices"
	"strings"
	"testing"

	"v6lab/internal/proto"
	"v6lab/internal/result"
)

// TestHTTPVersionListExpands: a list of versions is a cell group per
// version, labelled after it, each with its version and its server (h2
// over TLS by default, h2c with tls: false, h3 on its own server); one
// version given alone is one group under its label; a list's groups carry the suffix (a list of one too).
func TestHTTPVersionListExpands(t *testing.T) {
	e, err := Parse("v.yaml", []byte(`name: v
paths: [ipv4, ipv6, 6in4, nat64]
cells:
  - protocol: http
    http_version: [1.1, 2, 3]
    conns: [1, 10]
  - protocol: http
    label: clear
    tls: false
    http_version: [2]
    conns: [1]
  - protocol: http
    http_version: 3
    tls_resume: true
    zero_rtt: true
    label: web
    conns: [1]
  - protocol: http
    label: page
    http_version: [1.1, 3]
    conns: [1]
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	opt := func(g CellGroup, name string) string {
		f, _ := proto.FieldOf(g.Options, name)
		return f.Text()
	}
	for _, g := range e.Groups {
		got = append(got, g.CellName()+"="+opt(g, "http_version")+"@"+g.WireKey())
	}
	want := []string{"http=1.1@http", "http/2=2@https", "http/3=3@h3", "clear/h2c=2@http", "web=3@h3", "page=1.1@http", "page/3=3@h3"}
	if !slices.Equal(got, want) {
		t.Errorf("groups %v\nwant %v", got, want)
	}
	if opt(e.Groups[4], "zero_rtt") != "true" || opt(e.Groups[4], "tls_resume") != "true" || len(e.Groups[0].Paths) != 4 {
		t.Errorf("options lost: %+v", e.Groups[4])
	}
	if n := len(e.Plan()); n != 3*4*2*11+4*11+4*11+2*4*11 {
		t.Errorf("plan has %d steps", n)
	}
}

// TestHTTPVersionListedTwice: one version written two ways (2 and 2.0)
// is the version listed twice, said on its line, not a clash of labels.
func TestHTTPVersionListedTwice(t *testing.T) {
	for _, list := range []string{`[2, 2.0]`, `[2, "2"]`, `[3.0, 3]`} {
		_, err := Parse("v.yaml", []byte(`name: v
paths: [ipv4]
cells:
  - protocol: http
    http_version: `+list+`
    conns: [1]
`))
		if err == nil || !strings.Contains(err.Error(), "v.yaml:5: cells[0].http_version[1]: ") || !strings.Contains(err.Error(), "is listed twice") {
			t.Errorf("http_version: %s: %v", list, err)
		}
	}
}

// TestHTTP3WithoutTLSRefused: a cell listing 1.1 and 3 with tls: false
// is refused on its line (trial6 F10: its HTTP/3 ran over TLS regardless).
func TestHTTP3WithoutTLSRefused(t *testing.T) {
	_, err := Parse("e9.yaml", []byte(`name: v
paths: [ipv4]
cells:
  - protocol: http
    http_version: [1.1, 3]
    tls: false
    conns: [1]
`))
	if err == nil || !strings.Contains(err.Error(), "e9.yaml:6: cells[0].tls: false: HTTP/3 runs over QUIC") {
		t.Errorf("%v", err)
	}
}

// TestHTTPVersionHostsScheme: with where: hosts the url's scheme decides
// TLS, so an https url's HTTP/2 is h2 over TLS (http/2), an http url's
// h2c (trial7 F2: every hosts cell was labelled h2c).
func TestHTTPVersionHostsScheme(t *testing.T) {
	e, err := Parse("h.yaml", []byte(`name: h
where: hosts
paths: [ipv4, ipv6]
cells:
  - protocol: http
    url: "https://www.example.org/"
    http_version: 2
    conns: [1]
  - protocol: http
    url: "HTTPS://www.example.net/"
    label: net
    http_version: [1.1, 2]
    conns: [1]
  - protocol: http
    url: "http://www.example.org/"
    http_version: 2
    conns: [1]
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range e.Groups {
		got = append(got, g.CellName())
	}
	want := []string{"http/2", "net", "net/2", "http/h2c"}
	if !slices.Equal(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
}

// TestStepTitleIsTheReportsTitle (the progress line): a run's cell is
// named as the reports' tables name its group (result.GroupTitle), not by
// its internal key: HTTP/2 for http/2, WEB/2 (h2c) for a labelled h2c
// group, HTTP for a group naming no version, then its path and conns.
func TestStepTitleIsTheReportsTitle(t *testing.T) {
	e, err := Parse("v.yaml", []byte(`name: v
paths: [ipv4, ipv6]
cells:
  - protocol: http
    http_version: [1.1, 2, 3]
    conns: [1, 10]
  - protocol: http
    label: web
    tls: false
    http_version: 2
    conns: [1]
  - protocol: http
    label: plain
    conns: [1]
`))
	if err != nil {
		t.Fatal(err)
	}
	for cell, want := range map[[2]string]string{
		{"http", "ipv4"}:   "HTTP/1.1 over ipv4, 1 conn",
		{"http/2", "ipv6"}: "HTTP/2 over ipv6, 1 conn",
		{"http/3", "ipv4"}: "HTTP/3 over ipv4, 1 conn",
		{"web", "ipv4"}:    "WEB/2 (h2c) over ipv4, 1 conn",
		{"plain", "ipv6"}:  "PLAIN over ipv6, 1 conn",
		{"gone/2", "ipv6"}: "GONE/2 over ipv6, 1 conn",
	} {
		if got := e.StepTitle(result.Run{Protocol: cell[0], Path: cell[1], Conns: 1}); got != want {
			t.Errorf("%v: %q, want %q", cell, got, want)
		}
	}
	if got := e.StepTitle(result.Run{Protocol: "http/2", Path: "ipv4", Conns: 10}); got != "HTTP/2 over ipv4, 10 conns" {
		t.Errorf("10 conns: %q", got)
	}
}
