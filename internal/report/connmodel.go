package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// What a cell's transactions ran over, by what each completed sample
// recorded (its typed fields tls, kept, resumed, zero_rtt, which the http
// client sets beside the marker's words), not by the options asked for:
// TLS or cleartext, a kept connection (keepalive), a resumed TLS session,
// 0-RTT. Two results that differ in these measured different things, so
// the report says them in the tables' titles, in its notes and per cell in
// summary.json, and compare says when two cells differ in them.

// ConnFacts counts a cell's completed transactions of counted runs by what
// their connection did.
type ConnFacts struct {
	// TLS is those that spoke TLS (the sample's tls).
	TLS int `json:"tls,omitempty"`
	// Kept is those on a kept connection: no lookup, no handshake.
	Kept int `json:"kept,omitempty"`
	// Resumed is those whose TLS session was resumed (returning users).
	Resumed int `json:"resumed,omitempty"`
	// ZeroRTT is those whose request left in 0-RTT early data.
	ZeroRTT int `json:"zero_rtt,omitempty"`
	// Again is those that sent requests again on a new connection (the
	// sample's again: the server's GOAWAY or REFUSED_STREAM).
	Again int `json:"again,omitempty"`
	// AgainMore is those of them that needed more than one new connection
	// (the sample's again_conns: the server's limit of requests a
	// connection was below one page's).
	AgainMore int `json:"again_more,omitempty"`
}

// addConn counts one completed sample's connection facts.
func addConn(f **ConnFacts, smp *result.Sample) {
	tls := smp.TLS != ""
	if !tls && !smp.Kept && !smp.Resumed && !smp.ZeroRTT && smp.Again == 0 {
		return
	}
	if *f == nil {
		*f = &ConnFacts{}
	}
	(*f).TLS += b2i(tls)
	(*f).Kept += b2i(smp.Kept)
	(*f).Resumed += b2i(smp.Resumed)
	(*f).ZeroRTT += b2i(smp.ZeroRTT)
	(*f).Again += b2i(smp.Again > 0)
	(*f).AgainMore += b2i(smp.AgainConns > 1)
}

// counts are f's counts by their JSON names, for a run's totals
// (result.RunTotals.Conn; nil for none).
func (f *ConnFacts) counts() map[string]int {
	if f == nil {
		return nil
	}
	out := map[string]int{}
	for k, n := range map[string]int{"tls": f.TLS, "kept": f.Kept, "resumed": f.Resumed, "zero_rtt": f.ZeroRTT, "again": f.Again} {
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

// connOfCounts reads a run's totals' counts (counts) back.
func connOfCounts(m map[string]int) *ConnFacts {
	if len(m) == 0 {
		return nil
	}
	return &ConnFacts{TLS: m["tls"], Kept: m["kept"], Resumed: m["resumed"], ZeroRTT: m["zero_rtt"], Again: m["again"]}
}

// plus adds o's counts to f's.
func (f *ConnFacts) plus(o *ConnFacts) {
	f.TLS += o.TLS
	f.Kept += o.Kept
	f.Resumed += o.Resumed
	f.ZeroRTT += o.ZeroRTT
	f.Again += o.Again
	f.AgainMore += o.AgainMore
}

// mergeConn adds a run's facts to its cell's.
func mergeConn(f **ConnFacts, o *ConnFacts) {
	if o == nil {
		return
	}
	if *f == nil {
		*f = &ConnFacts{}
	}
	(*f).plus(o)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// groupConn sums a group's cells' facts and completed transactions.
func groupConn(s *Summary, group string) (ConnFacts, int) {
	var f ConnFacts
	done := 0
	for _, c := range cellsOf(s, group) {
		done += c.Completed
		if c.Conn != nil {
			f.plus(c.Conn)
		}
	}
	return f, done
}

// connModel settles what the samples recorded against the spec: a group
// the spec read as cleartext whose transactions spoke TLS is not (the
// samples are what ran), and each group that kept connections or resumed
// sessions gets a note.
func connModel(s *Summary, keepalive []string) {
	s.HTTPCleartext = slices.DeleteFunc(s.HTTPCleartext, func(g string) bool {
		f, _ := groupConn(s, g)
		return f.TLS > 0
	})
	if len(s.HTTPCleartext) == 0 {
		s.HTTPCleartext = nil
	}
	s.HTTPH2C = slices.DeleteFunc(s.HTTPH2C, func(g string) bool {
		f, _ := groupConn(s, g)
		return f.TLS > 0
	})
	if len(s.HTTPH2C) == 0 {
		s.HTTPH2C = nil
	}
	for _, g := range protocols(s) {
		f, done := groupConn(s, g)
		name := groupCalled(s, g)
		if f.Kept > 0 {
			s.Notes = append(s.Notes, keptNote(name, f.Kept, done))
			s.Notes = append(s.Notes, keptShareNotes(s, g)...)
			s.Notes = append(s.Notes, keptNothingNotes(s, g)...)
			s.Notes = append(s.Notes, keptApartNotes(s, g)...)
			s.Notes = append(s.Notes, keptRaceNotes(s, g)...)
		} else if done > 0 && slices.Contains(keepalive, g) {
			s.Notes = append(s.Notes, fmt.Sprintf("%s keepalive was asked, but none of its %s ran on a kept connection (the server closed each connection before the user's next transaction, or no user made a second one): its figures are new connections'", name, stats.Count(done, "completed transaction")))
		}
		if n := groupStreams(s, g); n > 1 {
			s.Notes = append(s.Notes, streamsNote(name, n))
		}
		if f.Resumed > 0 || f.ZeroRTT > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s returning users: TLS resumed in %s, 0-RTT in %d of %d (its handshake is a resumed one, not a full one)", name, stats.CountOf(f.Resumed, done, "completed transaction"), f.ZeroRTT, done))
		}
		if f.Again > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s requests sent again: in %s the server said it had not processed some requests (GOAWAY, as nginx's keepalive_requests sends, or REFUSED_STREAM, or it closed a kept connection idle) and they went again on a new connection, whose connect and handshake are in those transactions' times (the samples' again)%s", name, stats.CountOf(f.Again, done, "completed transaction"), againMore(f.AgainMore)))
		}
	}
}

// groupStreams is how many transactions each user of group g ran at once
// on its connection (its spec's streams): 1 when one at a time.
func groupStreams(s *Summary, g string) int {
	n := 1
	for _, c := range cellsOf(s, g) {
		n = max(n, c.Streams)
	}
	return n
}

// atOnce is " (4 at once)" for a group whose users ran 4 transactions at
// once on each connection, "" for one at a time: what the HTTP versions
// side by side add to its name, beside groups of one at a time.
func atOnce(s *Summary, g string) string {
	if n := groupStreams(s, g); n > 1 {
		return fmt.Sprintf(" (%d at once)", n)
	}
	return ""
}

// streamsNote says that group g's users ran n transactions at once on
// each connection, so that no one reads its times as one user's alone.
func streamsNote(g string, n int) string {
	return fmt.Sprintf("%s ran %d transactions at once on each connection (streams %d, as h2load -m %d): each transaction's time is under that load, not one user's alone, and conns counts connections", g, n, n, n)
}

// keptNote says how many of group g's done transactions ran on a kept
// connection: after each user's first when all did, else beside new ones.
func keptNote(g string, kept, done int) string {
	if kept >= done {
		return fmt.Sprintf("%s kept connections (keepalive): no lookup or handshake after each user's first; %s on a kept connection", g, stats.CountOf(kept, done, "completed transaction"))
	}
	return fmt.Sprintf("%s kept connections (keepalive) in part: %s on a kept connection (no lookup or handshake), the others opened a new connection (a lookup and a handshake each)", g, stats.CountOf(kept, done, "completed transaction"))
}

// againMore says how many transactions needed more than one new
// connection, when any did.
func againMore(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them needed more than one new connection (the server's limit of requests a connection, keepalive_requests, is below one page's: raise it to measure pages on one connection)", n)
}

// connTitle is what a group's connections did, for its tables' titles:
// "" for new connections with full handshakes.
func connTitle(s *Summary, group string) string {
	f, done := groupConn(s, group)
	var out []string
	w := keptWords(f.Kept, done)
	if n := groupStreams(s, group); n > 1 && w != "" {
		w += fmt.Sprintf(", %d at once on each", n)
	} else if n > 1 {
		w = fmt.Sprintf("%d transactions at once on each connection", n)
	}
	if w != "" {
		out = append(out, w)
	}
	if f.ZeroRTT > 0 {
		out = append(out, "returning users, TLS resumed, 0-RTT")
	} else if f.Resumed > 0 {
		out = append(out, "returning users, TLS resumed")
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// keptNothingNotes say, per cell of group g that kept none (where another
// cell kept at least half its transactions' connections), that its
// figures are new connections', with the shares of those that kept, as
// they are: the group's titles say it kept some (dialer v3's dual path
// opened a connection for every transaction, beside a kept ipv4). Whether
// its comparison with the baseline is like for like is keptApartNotes'
// (the baseline may have kept little itself).
func keptNothingNotes(s *Summary, g string) []string {
	var out []string
	name := groupCalled(s, g)
	cells := cellsOf(s, g)
	var mostly []string // the cells that kept at least half
	for _, c := range cells {
		if c.Completed > 0 && 2*keptOf(&c) >= c.Completed {
			mostly = append(mostly, fmt.Sprintf("%s %d kept %s", c.Path, c.Conns, keptShare(&c)))
		}
	}
	for _, c := range cells {
		if len(mostly) == 0 || c.Completed == 0 || keptOf(&c) > 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %d: none of its %s ran on a kept connection, while %s: its figures are new connections' (a lookup and a handshake each%s)", name, c.Path, c.Conns, stats.Count(c.Completed, "completed transaction"), strings.Join(mostly, ", "), raceWord(c.Path)))
	}
	return out
}

// KeptApart is how far apart (in points of the share of transactions on
// a kept connection) two cells' keeping must be for their comparison not
// to be like for like: 25 points (docs/metrics.md). Below it the share a
// lookup and a handshake take of either side's times differs little; a
// cell that kept none beside one that kept most (77bfe59), and trial7's
// ipv4 at 1 of 4 beside ipv6 at 3 of 4, are past it.
const KeptApart = 0.25

// keptOf is how many of c's completed transactions ran on a kept
// connection.
func keptOf(c *Cell) int {
	if c.Conn == nil {
		return 0
	}
	return c.Conn.Kept
}

// keptApart says whether cells a and b differ in keeping by KeptApart or
// more.
func keptApart(a, b *Cell) bool {
	if a.Completed == 0 || b.Completed == 0 {
		return false
	}
	d := float64(keptOf(a))/float64(a.Completed) - float64(keptOf(b))/float64(b.Completed)
	return d >= KeptApart-1e-9 || -d >= KeptApart-1e-9
}

// keptWords is what kept of done transactions were, for a title: "kept
// connections" when every one was, "keepalive: 5 of 32 transactions on a
// kept connection" (with "mostly new connections, " before it when under
// half were), "" when none.
func keptWords(kept, done int) string {
	switch {
	case kept == 0:
		return ""
	case kept >= done:
		return "kept connections"
	case 2*kept < done:
		return "keepalive: mostly new connections, " + stats.CountOf(kept, done, "transaction") + " on a kept connection"
	}
	return "keepalive: " + stats.CountOf(kept, done, "transaction") + " on a kept connection"
}

// keptShare is "1 of 12 (8%)".
func keptShare(c *Cell) string {
	return fmt.Sprintf("%d of %d (%.0f%%)", keptOf(c), c.Completed, 100*float64(keptOf(c))/float64(c.Completed))
}

// keptShareNotes say, for group g whose cells did not all keep every
// connection, each cell's share of transactions on a kept connection: the
// title's count is the group's, and a cell's figures mix kept and new
// connections in its own share.
func keptShareNotes(s *Summary, g string) []string {
	var parts []string
	name := groupCalled(s, g)
	whole := true
	for _, c := range cellsOf(s, g) {
		if c.Completed == 0 {
			continue
		}
		whole = whole && keptOf(&c) == c.Completed
		parts = append(parts, fmt.Sprintf("%s %d: %s", c.Path, c.Conns, keptShare(&c)))
	}
	if whole {
		return nil
	}
	return []string{fmt.Sprintf("%s transactions on a kept connection, per cell: %s; the rest opened a new connection (a lookup and a handshake each), so each cell's figures are of its own mix", name, strings.Join(parts, ", "))}
}

// keptApartNotes name each cell of group g whose share of kept
// transactions is KeptApart or more from the baseline's cell at its
// connections: their comparison is not like for like.
func keptApartNotes(s *Summary, g string) []string {
	var out []string
	name := groupCalled(s, g)
	for _, c := range cellsOf(s, g) {
		if b := baselineCell(s, g, &c); b != nil && keptApart(&c, b) {
			out = append(out, fmt.Sprintf("%s %s %d and %s %d kept connections in %s and %s of their transactions: %s points apart (%.0f or more), their comparison is not like for like (one side's times hold more new connections' lookups and handshakes)", name, c.Path, c.Conns, b.Path, b.Conns, keptShare(&c), keptShare(b), keptPoints(&c, b), 100*KeptApart))
		}
	}
	return out
}

// keptPoints is how many points apart a's and b's shares of kept
// transactions are, rounded as their own percentages are ("80").
func keptPoints(a, b *Cell) string {
	pa := math.Round(100 * float64(keptOf(a)) / float64(a.Completed))
	pb := math.Round(100 * float64(keptOf(b)) / float64(b.Completed))
	return fmt.Sprintf("%.0f", math.Abs(pa-pb))
}

// baselineCell is the baseline's cell of group g at c's connections (nil
// for none, or when c is the baseline's).
func baselineCell(s *Summary, g string, c *Cell) *Cell {
	if c.Path == s.Baseline {
		return nil
	}
	for _, b := range cellsOf(s, g) {
		if b.Path == s.Baseline && b.Conns == c.Conns {
			return &b
		}
	}
	return nil
}

// keptClause is what a verdict on path adds when its cells' keeping and
// the baseline's were KeptApart or more apart ("" otherwise): the
// difference is partly the lookups and handshakes one side made.
func keptClause(s *Summary, group, p string) string {
	var mine, theirs []string
	for _, c := range cellsOf(s, group) {
		if c.Path != p {
			continue
		}
		if b := baselineCell(s, group, &c); b != nil && keptApart(&c, b) {
			mine = append(mine, fmt.Sprintf("%s of its transactions at %s", keptShare(&c), connsText([]int{c.Conns})))
			theirs = append(theirs, keptShare(b))
		}
	}
	if len(mine) == 0 {
		return ""
	}
	return fmt.Sprintf("kept connections in %s, %s's in %s: not like for like", strings.Join(mine, ", "), s.Baseline, strings.Join(theirs, ", "))
}

// connsText is "1 and 10 connections".
func connsText(ns []int) string {
	words := make([]string, len(ns))
	for i, n := range ns {
		words[i] = fmt.Sprint(n)
	}
	unit := "connections"
	if len(ns) == 1 && ns[0] == 1 {
		unit = "connection"
	}
	if len(words) > 1 {
		words = append(words[:len(words)-2], words[len(words)-2]+" and "+words[len(words)-1])
	}
	return strings.Join(words, ", ") + " " + unit
}

// raceWord is ", and a race" for the dual path.
func raceWord(p string) string {
	if path.Path(p).Kind().Dual {
		return ", and a race"
	}
	return ""
}

// keptRaceNotes say, per dual cell of group g, that its kept transactions
// raced nothing: its Happy Eyeballs figures are its races' only (the
// transactions that made a connection), or left out when none raced, and
// its kept transactions' figures are of the family its users' first races
// chose (keptOn).
func keptRaceNotes(s *Summary, g string) []string {
	var out []string
	name := groupCalled(s, g)
	for _, c := range cellsOf(s, g) {
		if !path.Path(c.Path).Kind().Dual || c.Conn == nil || c.Conn.Kept == 0 {
			continue
		}
		races := c.Completed - c.Conn.Kept
		if races == 0 {
			out = append(out, fmt.Sprintf("%s %s %d: every counted transaction ran on a kept connection (keepalive): no Happy Eyeballs race ran in its counted runs (the warm-up's connections raced), so its share each family won and its winners are left out; its figures, and its comparison with the baseline, are those of the connections its users' first races chose%s", name, c.Path, c.Conns, keptOn(&c)))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %d: %d of %d counted transactions ran on a kept connection (keepalive) and raced nothing: its share each family won and its winners are over the %d that made a connection; the kept ones' figures are of the connections their users' first races chose%s", name, c.Path, c.Conns, c.Conn.Kept, c.Completed, races, keptOn(&c)))
	}
	return out
}

// keptOn says on which family (and transport) a dual cell's kept
// transactions ran: ": IPv6 in 100% of them (kept_ipv6)", or "" when its
// samples did not say.
func keptOn(c *Cell) string {
	v6 := c.Metrics["kept_ipv6"]
	if v6 == nil {
		return ""
	}
	out := ": IPv6 in " + metricText("kept_ipv6", v6) + " of them (kept_ipv6)"
	if q := c.Metrics["kept_quic"]; q != nil {
		out += ", QUIC in " + metricText("kept_quic", q) + " (kept_quic)"
	}
	return out
}
