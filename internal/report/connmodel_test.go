package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// versionsFile is a result of an http cell group over HTTP/1.1 and /2 as
// an experiment's header records it (spec: the given groups' JSON), with
// each sample's marker.
func versionsFile(t *testing.T, spec string, marker1, marker2 string) *result.File {
	t.Helper()
	f := build(baseMS, otherMS)
	var sp any
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		t.Fatal(err)
	}
	f.Header.Spec = sp
	n := len(f.Samples)
	for i := range n {
		f.Samples[i].Marker, f.Samples[i].Negotiated = marker1, "http/1.1"
		s := f.Samples[i]
		s.Cell, s.Protocol, s.Marker, s.Negotiated = strings.Replace(s.Cell, "http", "http/2", 1), "http/2", marker2, "h2"
		f.Samples = append(f.Samples, s)
	}
	for _, r := range slices.Clone(f.Runs) {
		r.Cell, r.Protocol = strings.Replace(r.Cell, "http", "http/2", 1), "http/2"
		f.Runs = append(f.Runs, r)
	}
	return f
}

const tlsMarker = "200 OK, 4 objects, TLS 1.3 TLS_AES_128_GCM_SHA256 X25519"

// TestHTTPCleartextFollowsWhatRan: an HTTP/1.1 group is called cleartext
// only when it ran so: web2026's groups are tls: true and were labelled
// "http/1.1 cleartext" with a footer telling the user to add the tls: true
// already there (trial4 F20).
func TestHTTPCleartextFollowsWhatRan(t *testing.T) {
	group := func(label, v, extra string) string {
		return `{"label":"` + label + `","protocol":"http","http_version":"` + v + `","paths":["ipv4","ipv6"],"conns":[2],"runs":10` + extra + `}`
	}
	for _, tc := range []struct {
		name, spec, marker string
		cleartext          []string
	}{
		{"tls: true", `{"cells":[` + group("http", "1.1", `,"tls":true`) + `,` + group("http/2", "2", `,"tls":true`) + `]}`, "200 OK", nil},
		{"https url (a probe's params)", `{"cells":[` + group("http", "1.1", `,"params":{"url":"https://x.test/"}`) + `,` + group("http/2", "2", `,"tls":true`) + `]}`, "200 OK", nil},
		{"samples spoke TLS", `{"cells":[` + group("http", "1.1", "") + `,` + group("http/2", "2", `,"tls":true`) + `]}`, tlsMarker, nil},
		{"really cleartext", `{"cells":[` + group("http", "1.1", "") + `,` + group("http/2", "2", `,"tls":true`) + `]}`, "200 OK, 4 objects", []string{"http"}},
	} {
		s := Summarize(versionsFile(t, tc.spec, tc.marker, tlsMarker))
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
	s := Summarize(versionsFile(t, spec, tlsMarker, "200 OK, 4 objects, h2, kept connection"))
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
	if !strings.Contains(notes, "http/2 kept connections (keepalive): no lookup or handshake after each user's first; 40 of 40") {
		t.Errorf("notes %q", s.Notes)
	}
	b, _ := json.Marshal(c)
	if !strings.Contains(string(b), `"connection":{"kept":20}`) {
		t.Errorf("cell json %s", b)
	}

	s = Summarize(versionsFile(t, spec, tlsMarker, "200 OK, 4 objects, h3, QUIC v1, 0-RTT, TLS 1.3 X25519 resumed"))
	if got := groupTitle(s, "http/2"); got != "HTTP/2 (returning users, TLS resumed, 0-RTT)" {
		t.Errorf("resumed group titled %q", got)
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "http/2 returning users: TLS resumed in 40 of 40 completed transactions, 0-RTT in 40 of 40") {
		t.Errorf("notes %q", s.Notes)
	}
}
