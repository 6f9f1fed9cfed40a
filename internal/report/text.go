package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"v6lab/internal/sock/path"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// Text writes the summary as the study's tables: per protocol, the mean
// response time per connection with its 95% CI per path and connection
// count (Table 3-1 shape), then the increase of each path over the baseline
// with its confidence level and the 95% CI of the difference (Tables 3-2 and
// 6-1), then pooled percentiles and failures.
func Text(w io.Writer, s *Summary) error {
	tw := &errWriter{w: w}
	fmt.Fprintf(tw, "%s — baseline %s, target %s\n", s.Name, s.Baseline, s.Target)
	if s.Partial != nil {
		fmt.Fprintln(tw, s.Partial.Line())
	}
	for _, l := range HeaderLines(s) {
		fmt.Fprintln(tw, l)
	}
	if vs := VerdictLines(s); len(vs) > 0 {
		fmt.Fprintf(tw, "\nIn short, against %s:\n", s.Baseline)
		for _, l := range vs {
			fmt.Fprintf(tw, "  %s\n", l)
		}
	}
	write := func(sec section) {
		fmt.Fprintf(tw, "\n%s\n", sec.Title)
		t := newTable(sec.Head)
		for _, r := range sec.Rows {
			t.add(r)
		}
		t.write(tw)
		for _, f := range sec.Footer {
			fmt.Fprintf(tw, "  %s\n", f)
		}
	}
	// A bulk-transfer study's file tables lead, and its file cell groups
	// have no tables of their own here (report.html and summary.json keep
	// them): dozens of files would bury the study's table.
	files := inFileTables(s)
	if len(files) > 0 {
		for _, sec := range studyTables(s) {
			write(sec)
		}
		fmt.Fprintf(tw, "\n(each file's response times, percentiles and comparisons: report.html and summary.json)\n")
	}
	for _, proto := range protocols(s) {
		if files[proto] {
			continue
		}
		if line := ConditionsLine(s, proto); line != "" {
			fmt.Fprintf(tw, "\n%s %s\n", groupTitle(s, proto), line)
		}
		for _, sec := range sections(s, proto) {
			write(sec)
		}
	}
	if len(files) == 0 {
		for _, sec := range studyTables(s) {
			write(sec)
		}
	}
	for _, sec := range PMTUTables(s) {
		write(sec)
	}
	for _, table := range []func(*Summary) (section, bool){SegmentTable, SegmentCellTable} {
		if sec, ok := table(s); ok {
			write(sec)
		}
	}
	if len(s.Notes) > 0 {
		fmt.Fprintln(tw, "\nNotes:")
		for _, n := range s.Notes {
			fmt.Fprintf(tw, "  - %s\n", n)
		}
	}
	fmt.Fprintln(tw, "\n"+Legend)
	return tw.err
}

// HeaderLines say where and how the figures were measured: tool, host and
// date, the lab's tunnel, congestion control and links, the servers.
func HeaderLines(s *Summary) []string {
	var out []string
	if line := machineLine(s); line != "" {
		out = append(out, line)
	}
	if t := TunnelLine(s); t != "" {
		out = append(out, t)
	}
	if g := s.Segment; g != nil {
		line := fmt.Sprintf("segment %s of a split run: a share of every run's users, to merge with the other segments (v6lab merge)", g)
		if !g.StartAt.IsZero() {
			line += "; run 0 scheduled for " + g.StartAt.UTC().Format(time.RFC3339Nano)
		}
		out = append(out, line)
	}
	if n := len(s.Segments); n > 0 {
		hosts := map[string]bool{}
		for _, g := range s.Segments {
			hosts[g.Host] = true
		}
		how := "every figure is of all segments' samples pooled, as one host running every user"
		if slices.ContainsFunc(s.Cells, func(c Cell) bool { return c.NA["rate_per_s"] == UnscheduledRate }) {
			how = "run without a schedule (--start-at), so not at once: every figure is of all segments' samples pooled but rate/s, left out"
		}
		out = append(out, fmt.Sprintf("merged from %s on %s: %s; each segment's share is in the Segments tables", stats.Count(n, "segment"), stats.Count(len(hosts), "client host"), how))
	}
	if s.SampleEvery > 1 {
		out = append(out, fmt.Sprintf("sampled: the samples file keeps one row of every %d samples of each run (--sample-every); every figure is of all of them (each run's totals)", s.SampleEvery))
	}
	if s.Scale > 0 {
		out = append(out, fmt.Sprintf("scaled by %g (--scale): connection counts, runs, file sizes and trial times shrunk as docs/experiments.md says; cell labels keep the experiment's names, the figures are of what ran", s.Scale))
	}
	if s.Seed != 0 {
		out = append(out, fmt.Sprintf("order: shuffled, seed %d (--shuffle --seed %d repeats it)", s.Seed, s.Seed))
	}
	if cc := s.Lab["congestion"]; cc != "" {
		out = append(out, "TCP congestion control in the lab: "+cc)
	}
	if l := s.Lab["links"]; l != "" {
		out = append(out, "links: "+l)
	}
	if r := s.Lab["shaping"]; r != "" {
		out = append(out, "shaped links: "+r)
	}
	if len(s.Engines) > 0 {
		var es []string
		label := "connection engine: "
		for _, k := range sortedKeys(s.Engines) {
			es = append(es, k+" "+s.Engines[k])
			if s.Engines[k] == LoadEngine {
				label = "engine: " // the load engine's queries are over UDP
			}
		}
		out = append(out, label+strings.Join(es, ", ")+" (docs/metrics.md)")
	}
	// How the lab built the translated and tunnelled IPv4 paths measured.
	for _, p := range []string{"nat64", "464xlat", "dslite"} {
		if d := s.Lab[p]; d != "" && slices.ContainsFunc(s.Cells, func(c Cell) bool { return c.Path == p }) {
			out = append(out, p+": "+d)
		}
	}
	if bs := s.Lab["server_tcp"]; bs != "" {
		out = append(out, "server host: "+bs)
	}
	for _, k := range sortedKeys(s.Servers) {
		out = append(out, "server "+k+": "+s.Servers[k])
	}
	return out
}

// machineLine is the header's first line: the tool, its host and what
// of the machine matters, and the date ("" when the summary has none).
func machineLine(s *Summary) string {
	m := s.Machine
	if m["tool"] == "" && m["host"] == "" {
		return ""
	}
	line := cmpOr(m["tool"], "v6lab")
	if m["host"] != "" {
		line += " on " + m["host"]
	}
	var what []string
	if m["kernel"] != "" {
		what = append(what, "kernel "+m["kernel"])
	}
	if m["cpus"] != "" {
		what = append(what, m["cpus"]+" CPUs")
	}
	if m["client_spin"] != "" {
		what = append(what, "client spin "+m["client_spin"])
	}
	if len(what) > 0 {
		line += " (" + strings.Join(what, ", ") + ")"
	}
	if !s.Created.IsZero() {
		line += ", " + s.Created.UTC().Format("2006-01-02 15:04 UTC")
	}
	return line
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TunnelLine says which 6in4 tunnel carried a lab run's 6in4 path, and
// warns when it was the userspace one ("" when the run had none, or no
// cell ran over 6in4: the lab builds its tunnel whatever the paths).
func TunnelLine(s *Summary) string {
	if !slices.ContainsFunc(s.Cells, func(c Cell) bool { return c.Path == string(path.SixIn4) }) {
		return ""
	}
	t := s.Lab["tunnel"]
	head := "6in4 tunnel: " + t
	if mtu := s.Lab["tunnel_mtu"]; mtu != "" {
		head += ", MTU " + mtu
	}
	switch t {
	case "":
		return ""
	case "sit":
		return head + " (the kernel's device)"
	case "bpf":
		hook := s.Lab["tunnel_hook"]
		if hook == "" {
			hook = "tc"
		}
		return head + " (v6lab's tc BPF programs in the kernel datapath, attached by " + hook + ")"
	case "userspace":
		return head + " — WARNING: the 6in4 figures include the cost of v6lab's userspace tunnel (TUN and a raw socket), not only 6in4's"
	}
	return head
}

// studyTables are the tables across cell groups, in the studies' shapes:
// file transfer tables, transport tables, the congestion table, and the
// differences.
func studyTables(s *Summary) []section {
	out := append(FileTables(s), TransportTables(s)...)
	for _, f := range []func(*Summary) (section, bool){CongestionTable, VersionsTable, VersionDiffs, DifferenceCIs} {
		if sec, ok := f(s); ok {
			out = append(out, sec)
		}
	}
	return out
}

// transportColumns are the figures shown per transport test, in order.
var transportColumns = map[string][]string{
	"TCP": {"throughput_mbps", "retransmits", "rtt_ms", "min_rtt_ms", "cwnd", "tcp_efficiency_pct", "buffer_delay_ms", "transfer_time_ratio"},
	"UDP": {"throughput_mbps", "offered_mbps", SendLateMetric, "loss_pct", "jitter_ms", "delay_var_ms", "duplicates", "reordered"},
}

// transportKind tells a TCP cell group from a UDP one by its figures (a
// group's name may be a label such as tcp-10m-mss1k).
func transportKind(cells []Cell) string {
	for _, c := range cells {
		if c.Metrics["retransmits"] != nil {
			return "TCP"
		}
		if c.Metrics["loss_pct"] != nil {
			return "UDP"
		}
	}
	return ""
}

// metricSection is the table of a transport test's figures, or of the
// figures each transaction recorded besides its times: the mean over
// counted runs and its 95% CI, per path and connection count.
func metricSection(title string, cells []Cell) (section, bool) {
	cols := transportColumns[transportKind(cells)]
	if cols == nil {
		for _, c := range cells {
			for k := range c.Metrics {
				if !slices.Contains(cols, k) && k != WireMetric && k != ClientTurnMetric { // beside the mean instead
					cols = append(cols, k)
				}
			}
		}
		sort.Strings(cols)
		if lookupsAnsweredAtOnce(cells) {
			cols = slices.DeleteFunc(cols, func(k string) bool { return k == lookupQueriesMetric })
		}
	}
	what, footer := "transport figures", []string(nil)
	if transportKind(cells) == "" {
		// Not a transport trial's: its transactions', which a kept
		// connection makes without a lookup, a handshake or a race
		// (trial6: an HTTP/2 kept dual cell's ttfb_ms was "transport
		// figures").
		what, footer = "figures per transaction", figuresFooter(cols, cells)
		if slices.Contains(cols, "ipv6_won") {
			what += "; the dual path's " + eyeballsTitle(cols)
		}
	}
	sec := section{Title: title + ": " + what + ", mean of run means (95% CI)", Head: append([]string{"path", "conns"}, cols...), Footer: footer}
	any := false
	for _, c := range cells {
		if len(c.Metrics) == 0 || len(cols) == 0 || !slices.ContainsFunc(cols, func(k string) bool { return c.Metrics[k] != nil }) {
			continue // none of the table's figures (a pinned path beside a dual one)
		}
		any = true
		row := []string{c.Path, fmt.Sprint(c.Conns)}
		for _, k := range cols {
			row = append(row, metricText(k, c.Metrics[k]))
		}
		sec.Rows = append(sec.Rows, row)
	}
	return sec, any
}

// lookupQueriesMetric is how many DNS queries a transaction's lookup sent.
const lookupQueriesMetric = "dns_queries"

// lookupsAnsweredAtOnce says whether every cell's lookups took as many
// queries as a lookup without a loss does (1; 2 on the dual path, AAAA
// and A; 3 in dialer v3's race, HTTPS too, its cells the ones with
// he_failed): a column of ones says nothing, and is left out.
func lookupsAnsweredAtOnce(cells []Cell) bool {
	for _, c := range cells {
		m := c.Metrics[lookupQueriesMetric]
		if m == nil {
			continue
		}
		want := 1.0
		switch {
		case c.Metrics["he_failed"] != nil:
			want = 3
		case path.Path(c.Path).Kind().Dual:
			want = 2
		}
		if m.Mean > want {
			return false
		}
	}
	return true
}

// figureWords say what a transaction's figures are (docs/metrics.md), in
// the order a figures table's footer names those it has.
var figureWords = []struct{ key, what string }{
	{"handshake_ms", "handshake_ms: from the lookup's end to connected, TCP and TLS or QUIC (the dual path's from its start)"},
	{"ttfb_ms", "ttfb_ms: the first byte, from the transaction's start"},
	{"kept_ipv6", "kept_ipv6: % of the dual path's kept transactions on an IPv6 connection, the family each user's first race chose (a kept connection races no more)"},
	{"kept_quic", "kept_quic: % of them on QUIC"},
}

// figuresFooter says what the figures among cols are, and, where the
// cells kept connections, what a kept transaction has of them.
func figuresFooter(cols []string, cells []Cell) []string {
	var known []string
	for _, w := range figureWords {
		if slices.Contains(cols, w.key) {
			known = append(known, w.what)
		}
	}
	if slices.ContainsFunc(cols, isFate) {
		known = append(known, "he_FAMILY_done_ms, _failed_ms, _silent_ms: what became of each family's first attempt, timed from its own start (the timer what-if's input; the race's, or timed after the transaction with whatif)")
	}
	var out []string
	if len(known) > 0 {
		out = append(out, strings.Join(known, "; "))
	}
	if !slices.ContainsFunc(cells, func(c Cell) bool { return c.Conn != nil && c.Conn.Kept > 0 }) {
		return out
	}
	kept := "kept connections: a transaction on a kept connection makes no lookup, handshake nor race"
	if slices.Contains(cols, "ttfb_ms") {
		kept += ": its ttfb_ms runs from its request"
	}
	if slices.ContainsFunc(cols, func(k string) bool { return k == "handshake_ms" || strings.HasPrefix(k, "he_") || raceMetrics[k] != "" }) {
		kept += "; handshake_ms and the Happy Eyeballs figures are those of the transactions that opened a connection only"
	}
	return append(out, kept+" (docs/metrics.md)")
}

// isFate says whether figure k is a family's fate in a race
// (result.FateKey): he_ipv6_done_ms and the like.
func isFate(k string) bool {
	for _, ipv6 := range []bool{true, false} {
		for _, st := range []string{result.FateDone, result.FateFailed, result.FateSilent} {
			if k == result.FateKey(ipv6, st) {
				return true
			}
		}
	}
	return false
}

// shares are the figures printed as a % (a mean of 0 or 1 per
// transaction).
var shares = map[string]bool{"ipv6_won": true, "quic_won": true, "kept_ipv6": true, "kept_quic": true}

// eyeballsFigures say what the dual path's figures are, in the order the
// title names them (docs/metrics.md): ipv6_won's mean is the share of
// transactions IPv6 won.
var eyeballsFigures = []struct {
	keys []string
	what string
}{
	{[]string{"ipv6_won", "quic_won"}, "% of transactions IPv6 won"},
	{[]string{"he_attempts", "he_failed"}, ""},
	{[]string{"he_https_ms", "he_aaaa_ms", "he_a_ms"}, "when each answer came"},
	{[]string{"he_began_ms"}, "when the attempts could start"},
	{[]string{"he_winner_start_ms", "he_connect_ms"}, "when the winner started and when it connected"},
}

// eyeballsTitle names the dual path's figures among cols, and only those
// (trial6 F19: a title listed columns the table did not have).
func eyeballsTitle(cols []string) string {
	var parts []string
	for _, g := range eyeballsFigures {
		var keys []string
		for _, k := range g.keys {
			if slices.Contains(cols, k) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		what := g.what
		switch {
		case len(keys) == 2 && keys[1] == "quic_won":
			what = "% of transactions IPv6 and QUIC won"
		case len(keys) == 1 && keys[0] == "he_winner_start_ms":
			what = "when the winner started"
		case len(keys) == 1 && keys[0] == "he_connect_ms":
			what = "when the winner connected"
		}
		part := strings.Join(keys, ", ")
		if what != "" {
			part += ": " + what
		}
		parts = append(parts, part)
	}
	title := "Happy Eyeballs"
	if slices.Contains(cols, "quic_won") {
		title += " v3"
	}
	return title + " (" + strings.Join(parts, "; ") + ")"
}

// metricText prints a cell's figure k: a checksum is an identity, not a
// quantity, so it is printed in hex when every run saw the same one; a
// figure that did not vary (a file's size) is printed without its
// empty CI.
func metricText(k string, m *MetricStat) string {
	switch {
	case m == nil:
		return "-"
	case shares[k]:
		// A share, in the unit every other share is printed in.
		if m.CI95 == nil || (m.CI95[0] == m.Mean && m.CI95[1] == m.Mean) {
			return figure(m.Mean*100) + "%"
		}
		return fmt.Sprintf("%s%% (%s–%s%%)", figure(m.Mean*100), figure(m.CI95[0]*100), figure(m.CI95[1]*100))
	case strings.HasSuffix(k, "crc32c"):
		for _, v := range m.Runs {
			if v != m.Mean {
				return "differs between runs"
			}
		}
		return fmt.Sprintf("%08x", uint32(m.Mean))
	case m.CI95 != nil && m.CI95[0] == m.Mean && m.CI95[1] == m.Mean:
		return figure(m.Mean)
	}
	return statText(m)
}

// figure prints a transport figure with precision that suits its size.
func figure(v float64) string {
	if a := math.Abs(v); a >= 100 || a == math.Trunc(a) {
		return fmt.Sprintf("%.0f", v)
	}
	return FormatMS(v)
}

// DifferenceCIs is the MITRE study's Table 6-1 shape: for every protocol
// and path, the 95% CI of its difference from the baseline at each
// connection count (lower to upper bound, as every other table here
// prints an interval; the study printed upper to lower), on one
// table across protocols. It is there when more than one protocol was
// compared; file sweeps have their own table (FileTables).
func DifferenceCIs(s *Summary) (section, bool) {
	swept := inFileTables(s)
	protos := filter(protocols(s), func(p string) bool { return !swept[p] && !timeBound(cellsOf(s, p)) })
	if len(protos) < 2 || len(s.Comparisons) == 0 {
		return section{}, false
	}
	conns := connsOf(s.Cells)
	sec := section{Title: fmt.Sprintf("95%% confidence intervals for differences from %s (ms), lower to upper", s.Baseline),
		Head: append([]string{"protocol", "path"}, intHeads(conns)...)}
	for _, proto := range protos {
		cmps := comparisonsOf(s, proto)
		for _, p := range pathsOfCmp(cmps) {
			row := []string{groupName(s, proto), p}
			for _, n := range conns {
				v := "n/a (not measured)"
				for _, c := range cmps {
					if c.Path == p && c.Conns == n {
						v = optRange(c.CI95DiffMS, c.NA["ci95_diff_ms"], " to ")
					}
				}
				row = append(row, v)
			}
			sec.Rows = append(sec.Rows, row)
		}
	}
	return sec, len(sec.Rows) > 0
}

// Legend explains n/a and the confidence level under every report.
const Legend = "n/a: not computable (reason in summary.json). Confidence level = 1 - two-sided Welch p; see docs/metrics.md."

// section is one of the study's tables for one protocol.
type section struct {
	Title  string
	Head   []string
	Rows   [][]string
	Footer []string
}

// sections are the tables of one protocol: the mean response time per
// connection with its 95% CI per path and connection count (Table 3-1
// shape), the increase of each path over the baseline with its confidence
// level and the 95% CI of the difference (Tables 3-2 and 6-1), then pooled
// percentiles and failures.
func sections(s *Summary, proto string) []section {
	cells := cellsOf(s, proto)
	conns := connsOf(cells)
	title := groupTitle(s, proto)
	out := []section{meansSection(title, cells, conns, lookupWhy(s, proto))}
	out[0].Title = strings.Replace(out[0].Title, "per connection", perWhat(s, proto), 1)
	if sec, ok := EyeballsSection(title, cells, s.Engines[proto], s.Dialers[proto]); ok {
		out = append(out, sec)
	}
	if sec, ok := WhatIfSection(title, cells); ok {
		out = append(out, sec)
	}
	if sec, ok := metricSection(title, cells); ok {
		out = append(out, sec)
	}
	out = append(out, comparisonSections(s, title, comparisonsOf(s, proto), cells, conns)...)
	return append(out, percentileSection(title, cells))
}

// groupTitle names a cell group in its tables' titles: HTTP/2 for an http
// group that spoke it, though its label says http only.
func groupTitle(s *Summary, group string) string {
	return groupName(s, group) + connTitle(s, group)
}

// groupName is a cell group's name in titles (result.GroupTitle).
func groupName(s *Summary, group string) string {
	return result.GroupTitle(group, s.HTTPVersions[group], slices.Contains(s.HTTPH2C, group))
}

// groupCalled is a cell group's name in notes (result.GroupCalled): the
// title's for a group that names its HTTP version.
func groupCalled(s *Summary, group string) string {
	return result.GroupCalled(group, s.HTTPVersions[group], slices.Contains(s.HTTPH2C, group))
}

// meansSection is the mean response time (a trial's transfer time) per
// path and connection count, with its interval, median, runs, completion,
// and the wire time and client turns where the samples have them; each
// note only where its row or mark is there, and given (names given, not
// looked up: --resolve, or an IP literal) says where the wire time starts.
func meansSection(title string, cells []Cell, conns []int, why string) section {
	what := "average response time per connection"
	if transportKind(cells) != "" {
		what = "transfer time per trial"
	}
	means := section{Title: title + ": " + what + " (ms), mean of run means",
		Head: append([]string{"path", ""}, intHeads(conns)...)}
	wired := slices.ContainsFunc(cells, func(c Cell) bool { return c.Metrics[WireMetric] != nil })
	turned := slices.ContainsFunc(cells, func(c Cell) bool { return c.Metrics[ClientTurnMetric] != nil })
	quic := slices.ContainsFunc(cells, func(c Cell) bool { return c.Negotiated["h3"] > 0 })
	means.Footer = append(means.Footer, timeNotes(wired, turned, wireNote(quic, why))...)
	lossy := slices.ContainsFunc(cells, func(c Cell) bool { return c.Loss != nil })
	for _, p := range pathsOf(cells) {
		means.Rows = append(means.Rows, meanRows(p, cells, conns, wired, turned)...)
		if lossy {
			means.Rows = append(means.Rows, lossRows(p, cells, conns)...)
		}
	}
	if lossy {
		means.Footer = append(means.Footer, "dropped by loss: the packets the loss the cell ran at dropped over its counted runs, from each run's record (its links), each loss apart where there are several; a cell whose loss dropped nothing did not meet it")
	}
	if slices.ContainsFunc(cells, func(c Cell) bool { return fewMark(&c) != "" }) {
		means.Footer = append(means.Footer, FewRunsNote)
	}
	for _, c := range cells {
		if len(c.OutlierRuns) > 0 {
			means.Footer = append(means.Footer, OutlierNote(&c))
		}
	}
	return means
}

// timeNotes explain the wire and client-turn rows that are there: the
// wire time from its first packet (wire: wireNote's); the client turns
// inside the wire time only where there is a wire row.
func timeNotes(wired, turned bool, wire string) []string {
	var out []string
	if wired {
		out = append(out, wire)
	}
	if turned && !wired {
		out = append(out, ClientTurnAloneNote)
	} else if turned {
		out = append(out, ClientTurnNote)
	}
	return out
}

// namesGiven says whether the run's names were given, not looked up
// (--resolve: the target's Notes say so).
func namesGiven(s *Summary) bool {
	return slices.ContainsFunc(s.Notes, func(n string) bool { return strings.HasPrefix(n, result.ResolveNotePrefix) })
}

// lookupWhy is why a group's transactions looked nothing up: names given
// (--resolve) or an IP literal URL; "" when they looked up.
func lookupWhy(s *Summary, group string) string {
	switch {
	case namesGiven(s):
		return whyGiven
	case slices.Contains(s.IPLiteral, group):
		return whyLiteral
	}
	return ""
}

// meanRows are one path's rows of the means table, a column per
// connection count ("-" where the path has no cell).
func meanRows(p string, cells []Cell, conns []int, wired, turned bool) [][]string {
	byConns := map[int]*Cell{}
	for i := range cells {
		if cells[i].Path == p {
			byConns[cells[i].Conns] = &cells[i]
		}
	}
	rows := [][]string{{p, "mean"}, {"", "95% CI"}, {"", "median of runs"}, {"", "runs counted"}, {"", "completed"}}
	if wired {
		rows = append(rows, []string{"", "wire mean"}, []string{"", "wire 95% CI"})
	}
	if turned {
		rows = append(rows, []string{"", "client turns"})
	}
	for _, n := range conns {
		c := byConns[n]
		if c == nil {
			for i := range rows {
				rows[i] = append(rows[i], "-")
			}
			continue
		}
		rows[0] = append(rows[0], optMS(c.MeanMS, c.NA["mean_ms"]))
		rows[1] = append(rows[1], optRange(c.CI95MS, c.NA["ci95_ms"], " – ")+fewMark(c))
		rows[2] = append(rows[2], optMS(c.MedianMS, "no runs")+outlierMark(c))
		rows[3] = append(rows[3], fmt.Sprint(len(c.Runs)))
		rows[4] = append(rows[4], completion(c))
		if wired {
			if w := c.Metrics[WireMetric]; w == nil {
				rows[5], rows[6] = append(rows[5], "-"), append(rows[6], "-")
			} else if why := c.MinorityNA(WireMetric); why != "" {
				rows[5], rows[6] = append(rows[5], "n/a ("+why+")"), append(rows[6], "-")
			} else {
				rows[5] = append(rows[5], FormatMS(w.Mean)) // as the mean above it: 166.8 and 167.0, not 167
				rows[6] = append(rows[6], optRange(w.CI95, "fewer than two runs", " – "))
			}
		}
		if turned {
			i := len(rows) - 1
			if t := c.Metrics[ClientTurnMetric]; t == nil {
				rows[i] = append(rows[i], "-")
			} else {
				rows[i] = append(rows[i], FormatMS(t.Mean))
			}
		}
	}
	return rows
}

// comparisonSections are a protocol's comparisons with the baseline: of
// the response time (not for trials bound by time, whose transfer time
// is the time asked for), of the wire time, and of a trial's throughput.
func comparisonSections(s *Summary, title string, cmps []Comparison, cells []Cell, conns []int) []section {
	var out []section
	busy, turned := false, false
	if len(cmps) > 0 && !timeBound(cells) {
		out = append(out, comparisonSection(fmt.Sprintf("%s: increase over %s (positive = slower than %s)", title, s.Baseline, s.Baseline),
			conns, cmps, []string{"actual increase (ms)", "% increase", "confidence level (1-p Welch)", "95% CI of difference (ms)",
				"paired difference (ms)", "95% CI paired (ms)", "p paired Holm / raw", "p Mann-Whitney"},
			func(c *Comparison) []string {
				mark := ""
				if c.DiffMS != nil { // n/a has no figure for the CPUs to distort
					mark = BusyMark(cellAt(cells, c.Path, c.Conns), cellAt(cells, s.Baseline, c.Conns))
				}
				busy = busy || mark != ""
				turned = turned || c.ClientTurnsFlagged
				return []string{optSigned(c.DiffMS, c.NA["diff_ms"]) + mark + TurnsMark(c), optPct(c.PctIncrease, c.NA["pct_increase"]), optConf(c.Confidence, c.NA["confidence"]),
					optRange(c.CI95DiffMS, c.NA["ci95_diff_ms"], " to "),
					optSigned(c.PairedDiffMS, c.NA["paired_diff_ms"]), optRange(c.CI95PairedDiffMS, c.NA["ci95_paired_diff_ms"], " to "),
					holmP(c.PPairedHolm, c.PPaired, c.NA["p_paired"]), optP(c.PMannWhitney, c.NA["p_mann_whitney"])}
			}, s.Adjustment))
		if busy {
			out[0].Footer = append(out[0].Footer, BusyNote)
		}
		if turned {
			out[0].Footer = append(out[0].Footer, TurnsNote)
		}
		out[len(out)-1].Footer = append(out[len(out)-1].Footer, spokeApart(s.Baseline, cmps, cells)...)
	}
	if wc := filter(cmps, func(c Comparison) bool { return c.Wire != nil }); len(wc) > 0 && !timeBound(cells) {
		out = append(out, comparisonSection(fmt.Sprintf("%s: wire time against %s (positive = slower than %s)", title, s.Baseline, s.Baseline),
			conns, wc, []string{"difference (ms)", "% change", "confidence level (1-p Welch)", "95% CI of difference (ms)"},
			func(c *Comparison) []string {
				w := c.Wire
				return []string{optSigned(w.Diff, w.NA["diff"]), optPct(w.PctChange, w.NA["pct_change"]), optConf(w.Confidence, w.NA["confidence"]),
					optRange(w.CI95Diff, w.NA["ci95_diff"], " to ")}
			}, ""))
	}
	if tp := filter(cmps, func(c Comparison) bool { return c.Throughput != nil }); len(tp) > 0 {
		out = append(out, comparisonSection(fmt.Sprintf("%s: throughput against %s (positive = faster than %s)", title, s.Baseline, s.Baseline),
			conns, tp, []string{"difference (Mbit/s)", "% change", "confidence level (1-p Welch)", "95% CI of difference (Mbit/s)",
				"paired difference (Mbit/s)", "95% CI paired (Mbit/s)", "p paired Holm / raw", "p Mann-Whitney"},
			func(c *Comparison) []string {
				t := c.Throughput
				return []string{optSigned(t.Diff, t.NA["diff"]), optPct(t.PctChange, t.NA["pct_change"]), optConf(t.Confidence, t.NA["confidence"]),
					optRange(t.CI95Diff, t.NA["ci95_diff"], " to "),
					optSigned(t.PairedDiff, t.NA["paired_diff"]), optRange(t.CI95PairedDiff, t.NA["ci95_paired_diff"], " to "),
					holmP(t.PPairedHolm, t.PPaired, t.NA["p_paired"]), optP(t.PMannWhitney, t.NA["p_mann_whitney"])}
			}, s.Adjustment))
	}
	return out
}

// cellAt is the cell of path p at conns connections among cells, or nil.
func cellAt(cells []Cell, p string, conns int) *Cell {
	for i := range cells {
		if cells[i].Path == p && cells[i].Conns == conns {
			return &cells[i]
		}
	}
	return nil
}

// spokeApart says where a compared cell's transactions spoke other
// protocols than the baseline's at the same connections (a dialer v3
// cell naming no http_version: what won the race on dual, HTTP/1.1 over
// TLS on the pinned baseline): the difference is then the versions' as
// well as the path's.
func spokeApart(baseline string, cmps []Comparison, cells []Cell) []string {
	find := func(p string, n int) *Cell {
		for i := range cells {
			if cells[i].Path == p && cells[i].Conns == n && len(cells[i].Negotiated) > 0 {
				return &cells[i]
			}
		}
		return nil
	}
	var out []string
	for _, c := range cmps {
		a, b := find(c.Path, c.Conns), find(baseline, c.Conns)
		if a == nil || b == nil || spoke(a, false) == spoke(b, false) {
			continue
		}
		out = append(out, fmt.Sprintf("%s at %d spoke %s, %s (the baseline) %s: the difference is the versions' as well as the path's",
			c.Path, c.Conns, spoke(a, false), baseline, spoke(b, false)))
	}
	return out
}

// percentileSection is the pooled percentiles, rate and failures per
// cell, with the first failure of each.
func percentileSection(title string, cells []Cell) section {
	// A trial's time is its transfer's; trials a second say nothing.
	trials := transportKind(cells) != ""
	pct := section{Title: title + ": response time percentiles (ms, nearest rank), pooled over counted runs",
		Head: []string{"path", "conns", "n", "p50", "p90", "p99", "p99.9", "rate/s", "failures"}}
	if trials {
		pct.Title = title + ": transfer time percentiles (ms, nearest rank), pooled over counted trials"
		pct.Head = slices.Delete(pct.Head, 7, 8)
	}
	thin := false
	for _, c := range cells {
		mark := func(name string, v *float64, why string) string {
			out := optMS(v, why)
			if v != nil && slices.Contains(c.ThinPercentiles, name) {
				thin = true
				return out + "†"
			}
			return out
		}
		row := []string{c.Path, fmt.Sprint(c.Conns), fmt.Sprint(c.PercentileN), mark("p50", c.P50MS, c.NA["p50_ms"]),
			mark("p90", c.P90MS, c.NA["p90_ms"]), mark("p99", c.P99MS, c.NA["p99_ms"]), mark("p99.9", c.P999MS, c.NA["p999_ms"]),
			optRate(c.RatePerS), failures(&c)}
		if trials {
			row = slices.Delete(row, 7, 8)
		}
		pct.Rows = append(pct.Rows, row)
	}
	if thin {
		pct.Footer = append(pct.Footer, ThinNote)
	}
	if !trials && slices.ContainsFunc(cells, func(c Cell) bool { return c.NA["rate_per_s"] == UnscheduledRate }) {
		pct.Footer = append(pct.Footer, "rate/s left out: "+UnscheduledRate)
	}
	for _, c := range cells {
		if c.FirstError != "" {
			pct.Footer = append(pct.Footer, fmt.Sprintf("first failure at %s/%s/%d: %s", c.Protocol, c.Path, c.Conns, c.FirstError))
		}
	}
	return pct
}

// comparisonSection is a table of each path's comparisons with the
// baseline, a block of rows (labels, filled by fill) per path and a column
// per connection count.
func comparisonSection(title string, conns []int, cmps []Comparison, labels []string, fill func(*Comparison) []string, adjustment string) section {
	sec := section{Title: title, Head: append([]string{"path", ""}, intHeads(conns)...)}
	if adjustment != "" {
		sec.Footer = append(sec.Footer, SignificanceNote(adjustment))
	}
	for _, p := range pathsOfCmp(cmps) {
		by := map[int]*Comparison{}
		for i := range cmps {
			if cmps[i].Path == p {
				by[cmps[i].Conns] = &cmps[i]
			}
		}
		rows := make([][]string, len(labels))
		for i, l := range labels {
			rows[i] = []string{"", l}
		}
		rows[0][0] = p
		for _, n := range conns {
			var vals []string
			if c := by[n]; c != nil {
				vals = fill(c)
			}
			for i := range rows {
				v := "-"
				if vals != nil {
					v = vals[i]
				}
				rows[i] = append(rows[i], v)
			}
		}
		sec.Rows = append(sec.Rows, rows...)
	}
	return sec
}

// timeBound tells whether cells are transport trials bound by time: their
// transfer time is the time asked for, so their paths are compared on
// throughput alone.
func timeBound(cells []Cell) bool {
	return transportKind(cells) != "" && !slices.ContainsFunc(cells, func(c Cell) bool { return c.Metrics["bytes_set"] != nil })
}

func protocols(s *Summary) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range s.Cells {
		if !seen[c.Protocol] {
			seen[c.Protocol] = true
			out = append(out, c.Protocol)
		}
	}
	return out
}

// filter keeps the elements for which keep is true.
func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

func cellsOf(s *Summary, proto string) []Cell {
	return filter(s.Cells, func(c Cell) bool { return c.Protocol == proto })
}

func comparisonsOf(s *Summary, proto string) []Comparison {
	return filter(s.Comparisons, func(c Comparison) bool { return c.Protocol == proto })
}

func connsOf(cells []Cell) []int {
	seen := map[int]bool{}
	var out []int
	for _, c := range cells {
		if !seen[c.Conns] {
			seen[c.Conns] = true
			out = append(out, c.Conns)
		}
	}
	sort.Ints(out)
	return out
}

func pathsOf(cells []Cell) []string {
	var out []string
	for _, c := range cells {
		if len(out) == 0 || out[len(out)-1] != c.Path {
			out = append(out, c.Path)
		}
	}
	return out
}

func pathsOfCmp(cs []Comparison) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cs {
		if !seen[c.Path] {
			seen[c.Path] = true
			out = append(out, c.Path)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return pathRank(out[i]) < pathRank(out[j]) })
	return out
}

func intHeads(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprint(n)
	}
	return out
}

// FormatMS prints a time in ms with precision that suits its size.
func FormatMS(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// WireNote and WireGivenNote say where the wire time starts: the DNS
// query, or without a lookup the first packet of the connection.
var (
	WireNote      = wireNote(false, "")
	WireGivenNote = wireNote(false, whyGiven)
)

// Why a transaction looked nothing up: its wire time starts at the first
// packet of its connection, the SYN or QUIC's first datagram.
const (
	whyGiven   = "the names were given with --resolve, not looked up"
	whyLiteral = "the URL's host is an IP literal: nothing looked up"
)

// wireNote explains the wire row: from the first packet out (the DNS
// query, or where why says nothing was looked up, the SYN, or the first
// QUIC datagram for HTTP/3, which sends no SYN) to the last needed bytes.
func wireNote(quic bool, why string) string {
	first := "the DNS query leaving"
	if why != "" {
		first = "the SYN leaving (" + why + ")"
		if quic {
			first = "the first QUIC datagram leaving (" + why + "; QUIC sends no SYN)"
		}
	}
	return "wire: the network's share by the kernel's timestamps, from " + first + " to the last needed bytes arriving (docs/metrics.md)"
}

// Notes under the tables: what the marks mean.
const (
	FewRunsNote = "‡ fewer than 5 counted runs: the interval rests on too few runs to say much (run more)"
	ThinNote    = "† fewer samples than this percentile needs to mean much (p99: 100, p99.9: 1000)"
	// ClientTurnAloneNote explains the client turns row without a wire row.
	ClientTurnAloneNote = "client turns: v6lab's own time inside the response time, from each reply's arrival to the send of the next request on the same connection, and from the DNS answer's to the connect it leads to (mean, ms; docs/metrics.md)"

	// ClientTurnNote explains the client turns row.
	ClientTurnNote = "client turns: v6lab's own time inside the wire time, from each reply's arrival to the send of the next request on the same connection, and from the DNS answer's to the connect it leads to (mean, ms; docs/metrics.md)"
)

// SignificanceNote explains the * mark and the confidence level.
func SignificanceNote(adjustment string) string {
	return fmt.Sprintf("* significant at %g%% after adjustment (%s); the confidence level is MITRE's column, 1-p of Welch's test, unadjusted", Alpha*100, adjustment)
}

// OutlierNote says which runs of a cell disagree wildly with the others.
func OutlierNote(c *Cell) string {
	var rs []string
	for _, r := range c.OutlierRuns {
		for i, ri := range c.RunIndex {
			if ri == r {
				rs = append(rs, fmt.Sprintf("run %d (%s ms)", r, FormatMS(c.Runs[i])))
			}
		}
	}
	return fmt.Sprintf("§ %s/%s/%d: %s far from the other runs (median %s ms): the mean is pulled by it; read the median, and look at that run",
		c.Protocol, c.Path, c.Conns, strings.Join(rs, ", "), optMS(c.MedianMS, ""))
}

// outlierMark marks a cell whose runs disagree wildly.
func outlierMark(c *Cell) string {
	if len(c.OutlierRuns) > 0 {
		return " §"
	}
	return ""
}

// fewMark marks a cell's interval that rests on too few runs.
func fewMark(c *Cell) string {
	if c.FewRuns && c.CI95MS != nil {
		return " ‡"
	}
	return ""
}

// holmP shows the adjusted and raw paired p-values, with * when the
// adjusted one is below Alpha.
func holmP(adj, raw *float64, why string) string {
	if adj == nil || raw == nil {
		return naText(why)
	}
	mark := ""
	if *adj < Alpha {
		mark = " *"
	}
	return optP(adj, "") + " / " + optP(raw, "") + mark
}

func naText(why string) string {
	if why == "" {
		return "n/a"
	}
	return "n/a (" + why + ")"
}

func optMS(v *float64, why string) string {
	if v == nil {
		return naText(why)
	}
	return FormatMS(*v)
}

func optSigned(v *float64, why string) string {
	if v == nil {
		return naText(why)
	}
	s := FormatMS(*v)
	if *v > 0 {
		s = "+" + s
	}
	return s
}

func optRange(v *[2]float64, why, sep string) string {
	if v == nil {
		return naText(why)
	}
	return FormatMS(v[0]) + sep + FormatMS(v[1])
}

func optPct(v *float64, why string) string {
	if v == nil {
		return naText(why)
	}
	return signedPct(*v)
}

// signedPct is a change in percent with its sign, 0.0% without one (a
// change that rounds to nothing is neither up nor down).
func signedPct(v float64) string {
	t := fmt.Sprintf("%+.1f%%", v)
	if t == "-0.0%" || t == "+0.0%" {
		return "0.0%"
	}
	return t
}

// optConf prints a confidence level (1-p) in whole percent, but never
// 100%: a p of 0.003 is 99.7%, and one below 0.0005 is ">99.9%".
func optConf(v *float64, why string) string {
	switch {
	case v == nil:
		return naText(why)
	case *v*100 < 99.5:
		return fmt.Sprintf("%.0f%%", *v*100)
	case *v*100 < 99.95:
		return fmt.Sprintf("%.1f%%", *v*100)
	}
	return ">99.9%"
}

func optP(v *float64, why string) string {
	if v == nil {
		return naText(why)
	}
	if *v < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", *v)
}

// optRate is a rate per second: whole above 10, with the decimals that
// tell it from zero below (about 1/s read "0" or "1").
func optRate(v *float64) string {
	switch {
	case v == nil:
		return "-"
	case *v < 10:
		return fmt.Sprintf("%.3g", *v)
	}
	return fmt.Sprintf("%.0f", *v)
}

func completion(c *Cell) string {
	if c.CompletionRate == nil {
		return naText(c.NA["completion_rate"])
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", *c.CompletionRate*100, c.Completed, c.Completed+c.Failed)
}

func failures(c *Cell) string {
	if c.Failed == 0 {
		return "0"
	}
	kinds := make([]string, 0, len(c.Failures))
	for k := range c.Failures {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, c.Failures[k])
	}
	return fmt.Sprintf("%d (%s)", c.Failed, strings.Join(parts, ", "))
}

// table aligns columns: the first two left, the rest right.
type table struct {
	rows [][]string
}

func newTable(head []string) *table { return &table{rows: [][]string{head}} }

func (t *table) add(r []string) { t.rows = append(t.rows, r) }

func (t *table) write(w io.Writer) {
	width := map[int]int{}
	for _, r := range t.rows {
		for i, c := range r {
			if l := len([]rune(c)); l > width[i] {
				width[i] = l
			}
		}
	}
	for ri, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < 2 && !(ri == 0 && i >= 2) {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// LoadEngine is the engine of a cell group whose mode is load (a DNS load
// test, as dnsperf: its conns are queries in flight, over UDP, not
// connections).
const LoadEngine = "load"

// perWhat is what a group's response time is per: a connection's
// transaction, one of a connection's transactions at once (streams), or
// a query of the load engine, whose conns are queries in flight.
func perWhat(s *Summary, group string) string {
	if s.Engines[group] == LoadEngine {
		return "per query (conns: queries in flight)"
	}
	if n := groupStreams(s, group); n > 1 {
		// Each figure is one transaction's, under n at once (trial12).
		return fmt.Sprintf("per transaction (%d at once on each connection)", n)
	}
	return "per connection"
}
