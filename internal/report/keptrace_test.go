package report

import (
	"bytes"
	"strings"
	"testing"
)

// dualKeptFile is build's result with its ipv6 cells made the dual path's:
// every transaction on a kept connection (recording the family it kept,
// ipv6_won), except those of users raced picks (a new connection: a race
// with its attempts).
func dualKeptSummary(t *testing.T, raced func(run, user int) bool) *Summary {
	t.Helper()
	f := build(baseMS, otherMS)
	for i := range f.Samples {
		s := &f.Samples[i]
		if s.Path != "ipv6" {
			continue
		}
		s.Path, s.Cell = "dual", strings.Replace(s.Cell, "ipv6", "dual", 1)
		s.Metrics = map[string]float64{"ipv6_won": 1}
		if raced(s.Run, s.User) {
			s.Metrics["he_attempts"] = 1
		} else {
			s.Kept = true
		}
	}
	for i := range f.Runs {
		if r := &f.Runs[i]; r.Path == "ipv6" {
			r.Path, r.Cell = "dual", strings.Replace(r.Cell, "ipv6", "dual", 1)
		}
	}
	return Summarize(f)
}

// TestKeptTransactionsAreNoRaces: with keepalive, a dual cell's kept
// transactions ran no Happy Eyeballs race: the share each family won and
// the winners' Wilson interval count only the races, and a cell whose
// counted runs raced nothing has none, with a note (trial6 F19).
func TestKeptTransactionsAreNoRaces(t *testing.T) {
	s := dualKeptSummary(t, func(run, user int) bool { return run == 0 })
	c := cellsOf(s, "http")
	var dual *Cell
	for i := range c {
		if c[i].Path == "dual" {
			dual = &c[i]
		}
	}
	if dual == nil || dual.Metrics["ipv6_won"] != nil || len(dual.Winners) != 0 {
		t.Fatalf("a dual cell that raced only in its warm-up: %+v", dual)
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "http dual 2: every counted transaction ran on a kept connection (keepalive): no Happy Eyeballs race ran in its counted runs") {
		t.Errorf("notes %q", s.Notes)
	}
	var b bytes.Buffer
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "IPv6 won") || strings.Contains(b.String(), "ipv6/tcp") {
		t.Errorf("report.txt counts kept transactions as races:\n%s", b.String())
	}

	// User 0's transactions raced (a new connection each), user 1's kept.
	s = dualKeptSummary(t, func(run, user int) bool { return user == 0 })
	for _, c := range cellsOf(s, "http") {
		if c.Path != "dual" {
			continue
		}
		if c.Winners["ipv6/tcp"] != c.Completed-c.Conn.Kept || c.Conn.Kept == 0 || c.Metrics["ipv6_won"] == nil {
			t.Errorf("winners %v of %d completed, %d kept", c.Winners, c.Completed, c.Conn.Kept)
		}
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "ran on a kept connection (keepalive) and raced nothing: its share each family won and its winners are over the") {
		t.Errorf("notes %q", s.Notes)
	}
}

// TestTheHappyEyeballsTitleNamesItsColumns: the figures table of a dual
// cell names the figures it shows, no others (trial6 F19).
func TestTheHappyEyeballsTitleNamesItsColumns(t *testing.T) {
	got := eyeballsTitle([]string{"ipv6_won", "ttfb_ms"})
	if got != "Happy Eyeballs (ipv6_won: % of transactions IPv6 won)" {
		t.Errorf("title %q", got)
	}
	got = eyeballsTitle([]string{"he_a_ms", "he_aaaa_ms", "he_attempts", "he_connect_ms", "ipv6_won"})
	if got != "Happy Eyeballs (ipv6_won: % of transactions IPv6 won; he_attempts; he_aaaa_ms, he_a_ms: when each answer came; he_connect_ms: when the winner connected)" {
		t.Errorf("title %q", got)
	}
	got = eyeballsTitle([]string{"he_winner_start_ms", "he_connect_ms", "ipv6_won", "quic_won"})
	if got != "Happy Eyeballs v3 (ipv6_won, quic_won: % of transactions IPv6 and QUIC won; he_winner_start_ms, he_connect_ms: when the winner started and when it connected)" {
		t.Errorf("title %q", got)
	}
}

// TestKeepaliveThatKeptNothingIsSaid: a group that asked for keepalive
// but whose every transaction opened a connection (the server closed
// them) gets a note saying so (trial6 F11).
func TestKeepaliveThatKeptNothingIsSaid(t *testing.T) {
	spec := `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true,"keepalive":true}]}`
	s := Summarize(versionsFile(t, spec, tlsConn, tlsConn))
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "http/2 keepalive was asked, but none of its 40 completed transactions ran on a kept connection") {
		t.Errorf("notes %q", s.Notes)
	}
	if strings.Contains(notes, "http keepalive") {
		t.Errorf("a group that did not ask is said to have: %q", s.Notes)
	}
	s = Summarize(versionsFile(t, spec, tlsConn, keptConn))
	if strings.Contains(strings.Join(s.Notes, "\n"), "keepalive was asked") {
		t.Errorf("a group that kept its connections: %q", s.Notes)
	}
}
