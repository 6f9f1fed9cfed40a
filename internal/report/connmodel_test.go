package report

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// versionsFile is a result of an http cell group over HTTP/1.1 and /2 as
// an experiment's header records it (spec: the given groups' JSON), with
// each sample's connection as conn1 and conn2 set it.
func versionsFile(t *testing.T, spec string, conn1, conn2 func(*result.Sample)) *result.File {
	t.Helper()
	f := build(baseMS, otherMS)
	var sp any
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		t.Fatal(err)
	}
	f.Header.Spec = sp
	n := len(f.Samples)
	for i := range n {
		f.Samples[i].Negotiated = "http/1.1"
		s := f.Samples[i]
		conn1(&f.Samples[i])
		s.Cell, s.Protocol, s.Negotiated = strings.Replace(s.Cell, "http", "http/2", 1), "http/2", "h2"
		conn2(&s)
		f.Samples = append(f.Samples, s)
	}
	for _, r := range slices.Clone(f.Runs) {
		r.Cell, r.Protocol = strings.Replace(r.Cell, "http", "http/2", 1), "http/2"
		f.Runs = append(f.Runs, r)
	}
	return f
}

// Connections as the http client records them: in the marker's words and
// in the typed fields the report reads.
var (
	tlsConn = func(s *result.Sample) {
		s.Marker, s.TLS = "200 OK, 4 objects, TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 full handshake", "TLS 1.3"
	}
	plainConn = func(s *result.Sample) { s.Marker = "200 OK, 4 objects" }
	keptConn  = func(s *result.Sample) { s.Marker, s.Kept = "200 OK, 4 objects, h2, kept connection", true }
	zeroConn  = func(s *result.Sample) {
		s.Marker = "200 OK, 4 objects, h3, QUIC v1, 0-RTT, TLS 1.3 X25519 resumed"
		s.TLS, s.Resumed, s.ZeroRTT = "TLS 1.3", true, true
	}
)

// TestHTTPCleartextFollowsWhatRan: an HTTP/1.1 group is called cleartext
// only when it ran so: web2026's groups are tls: true and were labelled
// "http/1.1 cleartext" with a footer telling the user to add the tls: true
// already there (trial4 F20).
func TestHTTPCleartextFollowsWhatRan(t *testing.T) {
	group := func(label, v, extra string) string {
		return `{"label":"` + label + `","protocol":"http","http_version":"` + v + `","paths":["ipv4","ipv6"],"conns":[2],"runs":10` + extra + `}`
	}
	for _, tc := range []struct {
		name, spec string
		conn       func(*result.Sample)
		cleartext  []string
	}{
		{"tls: true", `{"cells":[` + group("http", "1.1", `,"tls":true`) + `,` + group("http/2", "2", `,"tls":true`) + `]}`, plainConn, nil},
		{"https url (a probe's params)", `{"cells":[` + group("http", "1.1", `,"params":{"url":"https://x.test/"}`) + `,` + group("http/2", "2", `,"tls":true`) + `]}`, plainConn, nil},
		{"samples spoke TLS", `{"cells":[` + group("http", "1.1", "") + `,` + group("http/2", "2", `,"tls":true`) + `]}`, tlsConn, nil},
		{"really cleartext", `{"cells":[` + group("http", "1.1", "") + `,` + group("http/2", "2", `,"tls":true`) + `]}`, plainConn, []string{"http"}},
	} {
		s := Summarize(versionsFile(t, tc.spec, tc.conn, tlsConn))
		if !slices.Equal(s.HTTPCleartext, tc.cleartext) {
			t.Errorf("%s: http_cleartext %q, want %q", tc.name, s.HTTPCleartext, tc.cleartext)
		}
		sec, ok := VersionsTable(s)
		if !ok {
			t.Fatalf("%s: no versions table", tc.name)
		}
		said := strings.Contains(strings.Join(sec.Rows[4], "|"), "cleartext") || len(sec.Footer) > 0
		if said != (tc.cleartext != nil) {
			t.Errorf("%s: spoke row %q, footer %q", tc.name, sec.Rows[4], sec.Footer)
		}
	}
}

// TestKeptAndResumedAreSaid: kept connections and resumed (0-RTT)
// sessions measure another quantity than new connections: the tables'
// titles, the notes and each cell in summary.json say so, with counts
// (trial4 F3).
func TestKeptAndResumedAreSaid(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true}]}`
	s := Summarize(versionsFile(t, spec, tlsConn, keptConn))
	if got := groupTitle(s, "http/2"); got != "HTTP/2 (kept connections)" {
		t.Errorf("kept group titled %q", got)
	}
	if got := groupTitle(s, "http"); got != "HTTP/1.1" {
		t.Errorf("new-connection group titled %q", got)
	}
	c := cellsOf(s, "http/2")[0]
	if c.Conn == nil || c.Conn.Kept != c.Completed || c.Completed == 0 {
		t.Errorf("kept cell's connection facts %+v of %d", c.Conn, c.Completed)
	}
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "HTTP/2 kept connections (keepalive): no lookup or handshake after each user's first; 40 of 40") {
		t.Errorf("notes %q", s.Notes)
	}
	b, _ := json.Marshal(c)
	if !strings.Contains(string(b), `"connection":{"kept":20}`) {
		t.Errorf("cell json %s", b)
	}

	s = Summarize(versionsFile(t, spec, tlsConn, zeroConn))
	if got := groupTitle(s, "http/2"); got != "HTTP/2 (returning users, TLS resumed, 0-RTT)" {
		t.Errorf("resumed group titled %q", got)
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "HTTP/2 returning users: TLS resumed in 40 of 40 completed transactions, 0-RTT in 40 of 40") {
		t.Errorf("notes %q", s.Notes)
	}
}

// TestProbeGroupIsCalledByItsVersion: a probe's group is labelled http
// whatever version it speaks; its tables are titled HTTP/2, and so every
// note that names it says HTTP/2, in report.txt and report.html alike,
// never "http" (trial7 F8).
func TestProbeGroupIsCalledByItsVersion(t *testing.T) {
	f := build(baseMS, otherMS)
	f.Header.Spec = map[string]any{"cells": []any{map[string]any{"label": "http", "protocol": "http", "http_version": "2", "keepalive": true}}}
	for i := range f.Samples {
		if f.Samples[i].Path == "ipv6" && i%2 == 0 {
			tlsConn(&f.Samples[i]) // a new connection: the kept shares' notes name the group too
			continue
		}
		keptConn(&f.Samples[i])
	}
	s := Summarize(f)
	title := groupTitle(s, "http")
	if !strings.HasPrefix(title, "HTTP/2 (keepalive: ") {
		t.Fatalf("title %q", title)
	}
	var named int
	for _, n := range s.Notes {
		if strings.HasPrefix(n, "http ") || strings.Contains(n, "groups http") {
			t.Errorf("a note calls the group http: %q", n)
		}
		if strings.HasPrefix(n, "HTTP/2 ") {
			named++
		}
	}
	if named < 2 {
		t.Errorf("%d notes name the group HTTP/2, want its kept note and its shares': %q", named, s.Notes)
	}
	for _, render := range []func(io.Writer, *Summary) error{Text, HTML} {
		var b strings.Builder
		if err := render(&b, s); err != nil {
			t.Fatal(err)
		}
		out := html.UnescapeString(b.String())
		if !strings.Contains(out, title) || !strings.Contains(out, "HTTP/2 kept connections (keepalive) in part: ") || strings.Contains(out, "http kept") || strings.Contains(out, `<h2 id="http">http</h2>`) {
			t.Errorf("report does not call the group HTTP/2 in titles and notes alike:\n%s", out)
		}
	}
}

// TestVerdictsNameGroupsAsTheTablesDo: with more than one group, "In
// short" names each as its tables are titled (HTTP/1.1, HTTP/2), in
// report.txt and report.html alike.
func TestVerdictsNameGroupsAsTheTablesDo(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true}]}`
	s := Summarize(versionsFile(t, spec, tlsConn, tlsConn))
	lines := strings.Join(VerdictLines(s), "\n")
	if !strings.Contains(lines, "HTTP/1.1 over ipv6: ") || !strings.Contains(lines, "HTTP/2 over ipv6: ") {
		t.Errorf("In short:\n%s", lines)
	}
	var b strings.Builder
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<strong>HTTP/2 over ipv6</strong>") || strings.Contains(b.String(), "<strong>http/2 over") {
		t.Errorf("report.html's In short does not name the group HTTP/2")
	}
}

// TestHTMLAnchorsHoldNoSpace (trial9 N7): the versions section's anchor
// was id="HTTP versions", which no link can name.
func TestHTMLAnchorsHoldNoSpace(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true}]}`
	var b strings.Builder
	if err := HTML(&b, Summarize(versionsFile(t, spec, tlsConn, tlsConn))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `id="HTTP-versions"`) {
		t.Errorf("no HTTP-versions anchor")
	}
	for _, m := range regexp.MustCompile(`id="[^"]*"`).FindAllString(b.String(), -1) {
		if strings.ContainsAny(m, " \t") {
			t.Errorf("anchor %s holds a space", m)
		}
	}
}

// TestConnLabelsReadTypedFieldsNotWords: the labels come from the
// samples' typed fields, so a marker worded otherwise (here: none of the
// words the report once looked for) still gets them, and a marker that
// merely says the words does not.
func TestConnLabelsReadTypedFieldsNotWords(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1"},{"label":"http/2","protocol":"http","http_version":"2","tls":true}]}`
	reworded := func(s *result.Sample) {
		s.Marker = "200 OK, 4 objects, h3, reused, early data, TLSv1.3 session ticket"
		s.TLS, s.Kept, s.Resumed, s.ZeroRTT = "TLS 1.3", true, true, true
	}
	words := func(s *result.Sample) { s.Marker = "200 OK, 4 objects, TLS 1.3 resumed, 0-RTT, kept connection" }
	s := Summarize(versionsFile(t, spec, words, reworded))
	if got := groupTitle(s, "http/2"); got != "HTTP/2 (kept connections; returning users, TLS resumed, 0-RTT)" {
		t.Errorf("reworded markers' group titled %q", got)
	}
	if got := groupTitle(s, "http"); got != "HTTP/1.1" {
		t.Errorf("a group whose markers only say the words titled %q", got)
	}
	if c := cellsOf(s, "http")[0]; c.Conn != nil {
		t.Errorf("connection facts read from the marker's words: %+v", c.Conn)
	}
	if !slices.Equal(s.HTTPCleartext, []string{"http"}) {
		t.Errorf("http_cleartext %q: the words TLS 1.3 in a marker made it TLS", s.HTTPCleartext)
	}
}

// TestGroupNamesSayTheVersion: titles name a group's HTTP version; the h2c
// group is HTTP/2 (h2c), never the label upper-cased into "HTTP/H2C"
// (trial4 F19); a labelled group of one version, web of HTTP/2, is WEB/2
// as a list's web/2 is (docs/metrics.md, trial9 N13).
func TestGroupNamesSayTheVersion(t *testing.T) {
	s := &Summary{HTTPVersions: map[string]string{"http": "1.1", "http/2": "2", "http/h2c": "2", "web/h2c": "2", "mine": "3", "web": "2", "web/2": "2"}}
	for group, want := range map[string]string{"http": "HTTP/1.1", "http/2": "HTTP/2", "http/h2c": "HTTP/2 (h2c)", "web/h2c": "WEB/2 (h2c)", "mine": "MINE/3", "ftp": "FTP", "web": "WEB/2", "web/2": "WEB/2"} {
		if got := groupTitle(s, group); got != want {
			t.Errorf("group %s titled %q, want %q", group, got, want)
		}
	}
}

// TestResultsCSVSaysWhatWasMeasured: a cell's row in results.csv names the
// HTTP version it spoke and what its connections did, so a CSV read alone
// tells an HTTP/2 kept-connection cell from an HTTP/1.1 one (trial6 F8).
func TestResultsCSVSaysWhatWasMeasured(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true,"keepalive":true}]}`
	var b bytes.Buffer
	if err := CSV(&b, Summarize(versionsFile(t, spec, tlsConn, keptConn))); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, r := range csvRows(t, b.String()) {
		seen[r["protocol"]] = r["http_version"] + " | " + r["connection"]
	}
	if seen["http"] != "http/1.1 | new connections, full handshakes" || seen["http/2"] != "h2 | kept connections (keepalive)" {
		t.Errorf("what the cells measured: %q", seen)
	}
	// Cleartext (HTTP/1.1 without TLS, h2c) made no TLS handshake: its
	// row does not say "full handshakes", the words for TLS's (trial10 T14).
	spec = `{"cells":[{"label":"http","protocol":"http","http_version":"1.1"},{"label":"http/2","protocol":"http","http_version":"2"}]}`
	b.Reset()
	h2c := func(s *result.Sample) { plainConn(s); s.Negotiated = "h2c" }
	if err := CSV(&b, Summarize(versionsFile(t, spec, plainConn, h2c))); err != nil {
		t.Fatal(err)
	}
	for _, r := range csvRows(t, b.String()) {
		if r["connection"] != "new connections, no TLS" {
			t.Errorf("cleartext %s: connection %q", r["protocol"], r["connection"])
		}
	}
}

// TestResultsCSVOfACellThatNeverCompleted (trial9 N15): a cell none of
// whose transactions completed made no connection to describe; its row
// said "new connections, full handshakes".
func TestResultsCSVOfACellThatNeverCompleted(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true}]}`
	failed := func(s *result.Sample) {
		s.Negotiated, s.Marker, s.Err, s.ErrKind = "", "", "connect: timed out", result.ErrTimeout
	}
	var b bytes.Buffer
	if err := CSV(&b, Summarize(versionsFile(t, spec, tlsConn, failed))); err != nil {
		t.Fatal(err)
	}
	for _, r := range csvRows(t, b.String()) {
		if r["protocol"] == "http/2" && (r["connection"] != "none completed" || r["http_version"] != "2") {
			t.Errorf("a cell that never completed: http_version %q, connection %q", r["http_version"], r["connection"])
		}
	}
}
