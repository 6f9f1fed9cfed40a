package report

import (
	"bytes"
	"html"
	"slices"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// dualKeptFile is build's result with its ipv6 cells made the dual path's:
// every transaction on a kept connection (recording the family it kept,
// ipv6_won), except those of users raced picks (a new connection: a race
// with its attempts).
func dualKeptSummary(t *testing.T, raced func(run, user int) bool) *Summary {
	t.Helper()
	return Summarize(dualKeptFile(raced))
}

// dualKeptFile is dualKeptSummary's samples file.
func dualKeptFile(raced func(run, user int) bool) *result.File {
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
	return f
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
	if !strings.Contains(notes, "HTTP/2 keepalive was asked, but none of its 40 completed transactions ran on a kept connection") {
		t.Errorf("notes %q", s.Notes)
	}
	if strings.Contains(notes, "HTTP/1.1 keepalive") {
		t.Errorf("a group that did not ask is said to have: %q", s.Notes)
	}
	s = Summarize(versionsFile(t, spec, tlsConn, keptConn))
	if strings.Contains(strings.Join(s.Notes, "\n"), "keepalive was asked") {
		t.Errorf("a group that kept its connections: %q", s.Notes)
	}
}

// TestAKeptDualCellsFiguresSayWhatTheyAre: an HTTP/2 dual cell whose
// counted transactions all ran on kept connections has no race to show;
// its figures table (ttfb_ms beside the pinned path's) is titled as
// figures per transaction, never "transport figures", and says, as the
// cell's note does, that they are of the family each user's first race
// chose (kept_ipv6: 100% here); report.html's plots name the kept
// connections as its tables do.
func TestAKeptDualCellsFiguresSayWhatTheyAre(t *testing.T) {
	f := dualKeptFile(func(run, user int) bool { return run == 0 })
	for i := range f.Samples {
		if s := &f.Samples[i]; s.OK() {
			if s.Metrics == nil {
				s.Metrics = map[string]float64{}
			}
			s.Metrics["ttfb_ms"] = float64(s.TotalNS) / 2e6
			s.Kept = s.Kept || s.Run > 0 // ipv4's too
		}
	}
	s := Summarize(f)
	for _, c := range cellsOf(s, "http") {
		k := c.Metrics["kept_ipv6"]
		switch {
		case c.Path == "dual" && (k == nil || k.Mean != 1 || c.Metrics["ipv6_won"] != nil):
			t.Errorf("dual cell: kept_ipv6 %+v, ipv6_won %+v", k, c.Metrics["ipv6_won"])
		case c.Path != "dual" && k != nil:
			t.Errorf("%s cell has kept_ipv6 %+v", c.Path, k)
		}
	}
	var text, page bytes.Buffer
	if err := Text(&text, s); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{text.String(), html.UnescapeString(page.String())} {
		for _, want := range []string{
			"HTTP (kept connections): figures per transaction, mean of run means (95% CI)",
			"kept_ipv6: % of the dual path's kept transactions on an IPv6 connection, the family each user's first race chose",
			"kept connections: a transaction on a kept connection makes no lookup, handshake nor race: its ttfb_ms runs from its request",
			"are those of the connections its users' first races chose: IPv6 in 100% of them (kept_ipv6)",
		} {
			if !strings.Contains(doc, want) {
				t.Errorf("lacks %q:\n%s", want, doc)
			}
		}
		if strings.Contains(doc, "transport figures") || strings.Contains(doc, "Happy Eyeballs (") {
			t.Errorf("a kept cell's figures called transport figures or a race's:\n%s", doc)
		}
	}
	if !strings.Contains(page.String(), `aria-label="HTTP (kept connections): mean response time per connection, 95% CI"`) {
		t.Errorf("report.html's plots do not say the connections were kept")
	}
}

// TestACellThatKeptNothingBesideKeptOnesIsSaid: in a group whose ipv4
// cells kept their connections, a dual cell that opened one at every
// transaction (dialer v3's, on 2026-11-27) is said to have kept none, and
// its verdict against ipv4 says it is not like for like.
func TestACellThatKeptNothingBesideKeptOnesIsSaid(t *testing.T) {
	f := dualKeptFile(func(run, user int) bool { return true })
	for i := range f.Samples {
		if s := &f.Samples[i]; s.Path == "ipv4" && s.Run > 0 {
			s.Kept = true
		}
	}
	s := Summarize(f)
	var dual *Cell
	for _, c := range cellsOf(s, "http") {
		if c.Path == "dual" {
			dual = &c
		}
	}
	if dual == nil {
		t.Fatal("no dual cell")
	}
	notes := strings.Join(s.Notes, "\n")
	if want := "http dual 2: none of its " + itoa(dual.Completed) + " completed transactions ran on a kept connection, while ipv4 2 kept 20 of 20 (100%): its figures are new connections' (a lookup and a handshake each, and a race)"; !strings.Contains(notes, want) {
		t.Errorf("notes lack %q: %q", want, s.Notes)
	}
	vs := Verdicts(s)
	if len(vs) != 1 || !strings.Contains(vs[0].Text, "; kept connections in 0 of "+itoa(dual.Completed)+" (0%) of its transactions at 2 connections, ipv4's in 20 of 20 (100%): not like for like") {
		t.Errorf("verdicts %+v", vs)
	}
	if got := connsText([]int{1, 10, 100}); got != "1, 10 and 100 connections" {
		t.Errorf("connsText %q", got)
	}

	// Alike (both kept): neither the note nor the clause.
	f = dualKeptFile(func(run, user int) bool { return run == 0 })
	for i := range f.Samples {
		if s := &f.Samples[i]; s.Path == "ipv4" && s.Run > 0 {
			s.Kept = true
		}
	}
	s = Summarize(f)
	if vs := Verdicts(s); strings.Contains(vs[0].Text, "like for like") || strings.Contains(strings.Join(s.Notes, "\n"), "none of its") {
		t.Errorf("a dual cell kept like ipv4's: %+v, %q", vs, s.Notes)
	}
}

// keep marks the first share[path] counted transactions of each path as
// kept, the others as new connections.
func keep(f *result.File, share map[string]int) {
	n := map[string]int{}
	for i := range f.Samples {
		s := &f.Samples[i]
		if s.Run <= 0 || !s.OK() {
			continue
		}
		s.Kept = n[s.Path] < share[s.Path]
		n[s.Path]++
	}
}

// TestMixedKeptCellsAreSaid: with keepalive against a server that closed
// most connections (trial7 F10: 1 of 12 ipv4 transactions kept), the
// titles say how many transactions were kept, not "kept connections", a
// note gives each cell's share, and cells KeptApart or more apart from
// the baseline's are named in a note and their verdict; cells that both
// kept few are not.
func TestMixedKeptCellsAreSaid(t *testing.T) {
	f := build(baseMS, otherMS)
	keep(f, map[string]int{"ipv4": 5, "ipv6": 15})
	s := Summarize(f)
	if got, want := groupTitle(s, "http"), "HTTP (keepalive: 20 of 40 transactions on a kept connection)"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	notes := strings.Join(s.Notes, "\n")
	for _, want := range []string{
		"http kept connections (keepalive) in part: 20 of 40 completed transactions on a kept connection (no lookup or handshake), the others opened a new connection",
		"http transactions on a kept connection, per cell: ipv4 2: 5 of 20 (25%), ipv6 2: 15 of 20 (75%); the rest opened a new connection",
		"http ipv6 2 and ipv4 2 kept connections in 15 of 20 (75%) and 5 of 20 (25%) of their transactions: 50 points apart (25 or more), their comparison is not like for like",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %q", want, s.Notes)
		}
	}
	for c, want := range map[string]string{"ipv4": "mostly new connections (keepalive kept some)", "ipv6": "mostly kept connections (keepalive; some new)"} {
		for _, cell := range cellsOf(s, "http") {
			if _, got := cellMeasured(s, &cell); cell.Path == c && got != want {
				t.Errorf("results.csv: %s's connection %q, want %q", c, got, want)
			}
		}
	}
	if vs := Verdicts(s); len(vs) != 1 || !strings.Contains(vs[0].Text, "; kept connections in 15 of 20 (75%) of its transactions at 2 connections, ipv4's in 5 of 20 (25%): not like for like") {
		t.Errorf("verdicts %+v", vs)
	}

	// Both mostly new (2 of 20, 0 of 20): said in the title and the
	// shares, but alike: no clause, no note of a cell that kept nothing.
	f = build(baseMS, otherMS)
	keep(f, map[string]int{"ipv4": 2})
	s = Summarize(f)
	if got, want := groupTitle(s, "http"), "HTTP (keepalive: mostly new connections, 2 of 40 transactions on a kept connection)"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	notes = strings.Join(s.Notes, "\n")
	if vs := Verdicts(s); strings.Contains(vs[0].Text, "like for like") || strings.Contains(notes, "none of its") || strings.Contains(notes, "apart") {
		t.Errorf("cells alike in keeping: %+v, %q", vs, s.Notes)
	}
	if !strings.Contains(notes, "per cell: ipv4 2: 2 of 20 (10%), ipv6 2: 0 of 20 (0%)") {
		t.Errorf("notes %q", s.Notes)
	}
}

// TestKeptSharesAreSaidAsTheyAre: a baseline that kept little (2 of 20)
// beside a cell that kept none and one that kept 18 of 20: the cell that
// kept none is said beside the one that kept most, with its share, and
// never as set against the baseline's "kept connections" (the baseline's
// 10% and its 0% are alike: no note, no clause); the one that kept most is
// said with both shares as they are.
func TestKeptSharesAreSaidAsTheyAre(t *testing.T) {
	f := build(baseMS, otherMS)
	for _, x := range slices.Clone(f.Samples) {
		if x.Path == "ipv6" {
			x.Path, x.Cell = "nat64", strings.Replace(x.Cell, "ipv6", "nat64", 1)
			f.Samples = append(f.Samples, x)
		}
	}
	for _, r := range slices.Clone(f.Runs) {
		if r.Path == "ipv6" {
			r.Path, r.Cell = "nat64", strings.Replace(r.Cell, "ipv6", "nat64", 1)
			f.Runs = append(f.Runs, r)
		}
	}
	keep(f, map[string]int{"ipv4": 2, "nat64": 18})
	s := Summarize(f)
	notes := strings.Join(s.Notes, "\n")
	for _, want := range []string{
		"http transactions on a kept connection, per cell: ipv4 2: 2 of 20 (10%), ipv6 2: 0 of 20 (0%), nat64 2: 18 of 20 (90%)",
		"http ipv6 2: none of its 20 completed transactions ran on a kept connection, while nat64 2 kept 18 of 20 (90%): its figures are new connections' (a lookup and a handshake each)\n",
		"http nat64 2 and ipv4 2 kept connections in 18 of 20 (90%) and 2 of 20 (10%) of their transactions: 80 points apart (25 or more)",
	} {
		if !strings.Contains(notes+"\n", want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "ipv4 2 kept 2") || strings.Contains(notes, "against kept") || strings.Contains(notes, "ipv6 2 and ipv4") {
		t.Errorf("notes say the baseline's 10%% kept, or set ipv6's none against it:\n%s", notes)
	}
	for _, v := range Verdicts(s) {
		like := strings.Contains(v.Text, "not like for like")
		if want := v.Path == "nat64"; like != want {
			t.Errorf("%s verdict %q: not like for like %v, want %v", v.Path, v.Text, like, want)
		}
	}
}
