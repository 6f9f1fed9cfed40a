package report

import (
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestRequestsSentAgainAreSaid (trial6 F1): transactions whose requests
// went again on a new connection after the server's GOAWAY are counted
// per cell and said in a note, so a reader knows their times include a
// connection the kept ones do not.
func TestRequestsSentAgainAreSaid(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true}]}`
	n := 0
	again := func(s *result.Sample) {
		keptConn(s)
		if s.Path == "ipv6" {
			n++
			s.Again, s.AgainConns = 3, 1+n%2 // every other one on two new connections
		}
	}
	s := Summarize(versionsFile(t, spec, tlsConn, again))
	for _, c := range cellsOf(s, "http/2") {
		if want := map[string]int{"ipv4": 0, "ipv6": c.Completed}[c.Path]; c.Conn == nil || c.Conn.Again != want || c.Completed == 0 {
			t.Errorf("%s cell's connection facts %+v, want again %d", c.Path, c.Conn, want)
		}
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "HTTP/2 requests sent again: in 20 of 40 completed transactions") || strings.Contains(notes, "HTTP/1.1 requests sent again") ||
		!strings.Contains(notes, "; 10 of them needed more than one new connection") {
		t.Errorf("notes %q", s.Notes)
	}
}
