package report

import (
	"fmt"
	"slices"
	"strings"

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
	for _, g := range protocols(s) {
		f, done := groupConn(s, g)
		if f.Kept > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s kept connections (keepalive): no lookup or handshake after each user's first; %d of %d completed transactions on a kept connection", g, f.Kept, done))
			s.Notes = append(s.Notes, keptNothingNotes(s, g)...)
			s.Notes = append(s.Notes, keptRaceNotes(s, g)...)
		} else if done > 0 && slices.Contains(keepalive, g) {
			s.Notes = append(s.Notes, fmt.Sprintf("%s keepalive was asked, but none of its %d completed transactions ran on a kept connection (the server closed each connection before the user's next transaction, or no user made a second one): its figures are new connections'", g, done))
		}
		if f.Resumed > 0 || f.ZeroRTT > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s returning users: TLS resumed in %d of %d completed transactions, 0-RTT in %d of %d (its handshake is a resumed one, not a full one)", g, f.Resumed, done, f.ZeroRTT, done))
		}
		if f.Again > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s requests sent again: in %d of %d completed transactions the server said it had not processed some requests (GOAWAY, as nginx's keepalive_requests sends, or REFUSED_STREAM, or it closed a kept connection idle) and they went again on a new connection, whose connect and handshake are in those transactions' times (the samples' again)%s", g, f.Again, done, againMore(f.AgainMore)))
		}
	}
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
	f, _ := groupConn(s, group)
	var out []string
	if f.Kept > 0 {
		out = append(out, "kept connections")
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

// keptNothingNotes say, per cell of group g (which kept connections
// elsewhere) that kept none, that its figures are new connections': the
// group's titles say "kept connections", and its comparison sets them
// against kept ones (dialer v3's dual path opened a connection for every
// transaction, beside a kept ipv4).
func keptNothingNotes(s *Summary, g string) []string {
	var out []string
	for _, c := range cellsOf(s, g) {
		if c.Completed == 0 || c.Conn != nil && c.Conn.Kept > 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %d: none of its %d completed transactions ran on a kept connection, though the group's other cells kept theirs: its figures are new connections' (a lookup and a handshake each%s), and its comparison sets them against kept connections", g, c.Path, c.Conns, c.Completed, raceWord(c.Path)))
	}
	return out
}

// keptClause is what a verdict on path adds when its cells' connections
// and the baseline's were not alike, one side kept (keepalive), the other
// new at every transaction ("" otherwise): the difference is partly the
// lookups and handshakes one side made.
func keptClause(s *Summary, group, p string) string {
	kept := func(c *Cell) bool { return c.Conn != nil && c.Conn.Kept > 0 }
	var mine, theirs []int
	for _, c := range cellsOf(s, group) {
		if c.Path != p || c.Completed == 0 {
			continue
		}
		for _, b := range cellsOf(s, group) {
			if b.Path == s.Baseline && b.Conns == c.Conns && b.Completed > 0 && kept(&c) != kept(&b) {
				if kept(&c) {
					mine = append(mine, c.Conns)
				} else {
					theirs = append(theirs, c.Conns)
				}
			}
		}
	}
	switch {
	case len(theirs) > 0:
		return fmt.Sprintf("its connections were new at every transaction, %s's kept (at %s): not like for like", s.Baseline, connsText(theirs))
	case len(mine) > 0:
		return fmt.Sprintf("its connections were kept, %s's new at every transaction (at %s): not like for like", s.Baseline, connsText(mine))
	}
	return ""
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
	for _, c := range cellsOf(s, g) {
		if !path.Path(c.Path).Kind().Dual || c.Conn == nil || c.Conn.Kept == 0 {
			continue
		}
		races := c.Completed - c.Conn.Kept
		if races == 0 {
			out = append(out, fmt.Sprintf("%s %s %d: every counted transaction ran on a kept connection (keepalive): no Happy Eyeballs race ran in its counted runs (the warm-up's connections raced), so its share each family won and its winners are left out; its figures, and its comparison with the baseline, are those of the connections its users' first races chose%s", g, c.Path, c.Conns, keptOn(&c)))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %d: %d of %d counted transactions ran on a kept connection (keepalive) and raced nothing: its share each family won and its winners are over the %d that made a connection; the kept ones' figures are of the connections their users' first races chose%s", g, c.Path, c.Conns, c.Conn.Kept, c.Completed, races, keptOn(&c)))
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
