package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// conditionNotes name every measurement condition in which a and b differ:
// each setting of their labs (links' rate and loss, tunnel, MTU, nat64,
// congestion control, the lab's configuration), of their machines (tool
// version, host, kernel, CPUs) and of their servers, and the scale. Their
// figures set side by side differ by these too. The lab's own name and
// the ports it chose are a run's, not a condition.
func conditionNotes(a, b *Summary) []string {
	notes := lossNotes(a, b)
	notes = append(notes, labNotes(a.Lab, b.Lab, len(notes) > 0)...)
	for _, k := range unionKeys(a.Machine, b.Machine) {
		va, oka := a.Machine[k]
		vb, okb := b.Machine[k]
		if va != vb {
			notes = append(notes, fmt.Sprintf("machine %s differs: A %s; B %s", cmpOr(machineWords[k], k), orNone(va, oka), orNone(vb, okb)))
		}
	}
	notes = append(notes, serverNotes(a, b)...)
	if sa, sb := scaleOf(a), scaleOf(b); sa != sb {
		notes = append(notes, fmt.Sprintf("scale differs: A %g; B %g", sa, sb))
	}
	notes = append(notes, groupNotes(a, b)...)
	if len(notes) > 0 {
		notes = append([]string{"A and B were measured under different conditions (below): their differences include these"}, notes...)
	}
	return notes
}

// machineWords say a machine key in words where it would not.
var machineWords = map[string]string{"client_spin": "client spin (--spin)", "cpus": "CPUs", "go": "Go version"}

// labNotes name each setting in which two labs differ, in words: the
// links as their header line says them (not again as the configuration's
// fields), a setting one lab lacks as "none". Of a result that ran in no
// lab there is nothing to set beside the other's settings: the targets'
// note says that one ran in a lab (trial10 T9). lossSaid: the cells' loss
// note said the loss, so the lab's loss keys, and the loss in the links,
// are not said again.
func labNotes(a, b map[string]string, lossSaid bool) []string {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	la, lb := flatLab(a), flatLab(b)
	for _, lab := range []map[string]string{la, lb} {
		for k := range lab {
			if said := saidBy(k); said != "" && (a[said] != "" || b[said] != "") {
				delete(lab, k)
			}
		}
		if lossSaid {
			dropLossKeys(lab)
			if l, ok := lab["links"]; ok {
				lab["links"] = withoutLoss(l)
			}
		}
	}
	var notes []string
	for _, k := range unionKeys(la, lb) {
		va, oka := la[k]
		vb, okb := lb[k]
		if va != vb {
			notes = append(notes, fmt.Sprintf("lab %s differs: A %s; B %s", labKeyWords(k), labValue(va, oka), labValue(vb, okb)))
		}
	}
	return notes
}

// saidBy is the header key that says configuration key k in words (its
// links line, its nat64 or pmtu description), "" for none.
func saidBy(k string) string {
	for prefix, key := range map[string]string{"config.shaping.": "links", "config.links.": "links", "config.nat64.": "nat64",
		"config.pmtu.": "pmtu", "config.bare_server": "server_tcp"} {
		if strings.HasPrefix(k, prefix) {
			return key
		}
	}
	return ""
}

// withoutLoss is a links line ("client-r1 unshaped, loss 3%, mtu 1500;
// …") without its losses.
func withoutLoss(links string) string {
	var out []string
	for _, link := range strings.Split(links, "; ") {
		out = append(out, strings.Join(slices.DeleteFunc(strings.Split(link, ", "), func(f string) bool { return strings.HasPrefix(f, "loss ") }), ", "))
	}
	return strings.Join(out, "; ")
}

// labValue is a lab setting's value in a note: "none" for a setting the
// lab did not have (a header key is written only where it applies).
func labValue(v string, ok bool) string {
	if !ok || v == "" {
		return "none"
	}
	return v
}

// groupNotes name, per cell group both have, what its cells measured that
// differs: the HTTP version spoken, the engine and dialer, and what the
// connections did (kept or new, TLS resumed or full, 0-RTT). A cell "http"
// of HTTP/1.1 and one of HTTP/3, or of new and kept connections, are
// paired by name but are not the same measurement (trial4 F4). A group
// that names no http_version, of the protocol of the other's group that
// names one, spoke its default, HTTP/1.1: said so, never "not named"
// against the same version (trial10 T9).
func groupNotes(a, b *Summary) []string {
	var notes []string
	inB := protocols(b)
	for _, g := range protocols(a) {
		if !slices.Contains(inB, g) {
			continue
		}
		va, vb := versionOf(a, g), versionOf(b, g)
		defA := va == "" && vb != "" && sameProtocol(a, b, g)
		defB := vb == "" && va != "" && sameProtocol(a, b, g)
		if defA {
			va = defaultVersion
		}
		if defB {
			vb = defaultVersion
		}
		for _, d := range []struct {
			what, a, b string
			defA, defB bool
		}{
			{"HTTP version", va, vb, defA, defB},
			{"engine", a.Engines[g], b.Engines[g], false, false},
			{"dialer", a.Dialers[g], b.Dialers[g], false, false},
			{"connections", connKind(a, g, va), connKind(b, g, vb), false, false},
			{"streams", strconv.Itoa(groupStreams(a, g)), strconv.Itoa(groupStreams(b, g)), false, false},
			{"duration", durationWords(a.groupDuration[g]), durationWords(b.groupDuration[g]), false, false},
		} {
			if d.a != d.b {
				notes = append(notes, fmt.Sprintf("%s: %s differs: A %s; B %s", g, d.what, groupWords(d.a, d.defA), groupWords(d.b, d.defB)))
			}
		}
	}
	return notes
}

// durationWords says how a group's users ran: for a duration, repeating
// transactions (sustained), else one transaction each a run: figures of
// the two are not of the same load (a kept connection's many against a
// new one's one).
func durationWords(d string) string {
	if d == "" {
		return "none (one transaction a user a run)"
	}
	return d + " a run (each user repeating transactions)"
}

// defaultVersion is what an http cell that names no http_version speaks
// (docs/metrics.md), as its transactions would name it.
const defaultVersion = "http/1.1"

// sameProtocol says whether group g of a and of b are of one protocol by
// their specs (a label may name groups of two).
func sameProtocol(a, b *Summary, g string) bool {
	return a.groupProto[g] != "" && a.groupProto[g] == b.groupProto[g]
}

// groupWords is a group note's value: "(not named: the default)" for
// none, a default version named as one (defaulted).
func groupWords(v string, defaulted bool) string {
	switch {
	case v == "":
		return "(not named: the default)"
	case defaulted:
		return v + " (no http_version named: the default)"
	}
	return v
}

// versionOf is the HTTP version a group spoke: what its transactions
// negotiated, else its spec's http_version.
func versionOf(s *Summary, group string) string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cellsOf(s, group) {
		for p := range c.Negotiated {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return specSpoke(s, group)
	}
	slices.Sort(out)
	return strings.Join(out, "+")
}

// specSpoke is a group's http_version as its transactions would name it
// (2: h2, or h2c in the clear; 3: h3; 1.1: http/1.1), for a group none of
// whose counted transactions negotiated one: compared with another
// result's negotiated version, "2" and "h2" are the same.
func specSpoke(s *Summary, group string) string {
	switch v := s.HTTPVersions[group]; {
	case v == "2" && slices.Contains(s.HTTPH2C, group):
		return "h2c"
	case v == "2":
		return "h2"
	case v == "3":
		return "h3"
	case v == "1.1":
		return "http/1.1"
	default:
		return v
	}
}

// connKind is what a group's connections did, in words, the group having
// spoken version (versionOf, or the default): "" for a group without an
// HTTP version or connection facts.
func connKind(s *Summary, group, version string) string {
	f, done := groupConn(s, group)
	if version == "" && f == (ConnFacts{}) {
		return ""
	}
	clear := cleartext(s, group, version)
	if version != versionOf(s, group) { // the default: its spec says whether TLS
		clear = f.TLS == 0 && slices.Contains(s.plainSpec, group)
	}
	return connWords(f, done, clear)
}

// cleartext says a group spoke HTTP without TLS: HTTP/1.1 without it
// (the spec's), or h2c (what the transactions spoke).
func cleartext(s *Summary, group, spoke string) bool {
	return slices.Contains(s.HTTPCleartext, group) || spoke == "h2c"
}

// connWords says what connections with facts f of done transactions did:
// "kept connections (keepalive)" (every one kept), "mostly new
// connections (keepalive kept some)", "new connections, full
// handshakes" (TLS's), "new connections, no TLS" (clear: cleartext), ….
func connWords(f ConnFacts, done int, clear bool) string {
	out := "new connections"
	switch {
	case f.Kept == 0:
	case f.Kept >= done:
		out = "kept connections (keepalive)"
	case 2*f.Kept < done:
		out = "mostly new connections (keepalive kept some)"
	default:
		out = "mostly kept connections (keepalive; some new)"
	}
	switch {
	case f.ZeroRTT > 0:
		out += ", TLS resumed with 0-RTT"
	case f.Resumed > 0:
		out += ", TLS resumed"
	case f.Kept == 0 && clear:
		out += ", no TLS" // "full handshakes" would read as TLS's
	case f.Kept == 0:
		out += ", full handshakes"
	}
	return out
}

// labWords say a lab's setting in words where its key would not.
var labWords = map[string]string{"tunnel_mtu": "6in4 tunnel MTU", "tunnel": "6in4 tunnel", "tunnel_hook": "6in4 tunnel's BPF hook",
	"tunnel_why": "6in4 tunnel's datapath, why", "loss": "loss emulation", "config.shaping.Loss": "loss on every link (percent)",
	"pcap": "packet capture (--pcap)", "wire_check": "wire check", "congestion": "TCP congestion control", "nat64": "NAT64",
	"464xlat": "464XLAT", "dslite": "DS-Lite", "generators": "background traffic hosts", "server_tcp": "server host's TCP",
	"sysctl_changed": "sysctls v6lab changed", "shaping": "how the links are shaped", "link_rates": "cell groups' link rates",
	"server_capture": "server-side capture", "pmtu": "path MTU", "r1_r2_mtu": "MTU between the routers",
	"config.bpf_hook": "BPF hook asked for", "config.no_tunnel": "no 6in4 tunnel", "config.sites": "sites file",
	"config.nat64.prefix": "NAT64 prefix", "config.nat64.mode": "NAT64 mode", "config.nat64.pool": "NAT64 pool",
	"config.pmtu.mss_clamp": "MSS clamp (--mss-clamp)", "config.pmtu.ptb_blackhole": "Packet Too Big blackhole (--ptb-blackhole)",
	"config.pmtu.fragments": "fragments dropped (--fragments)", "config.pmtu.tcp_mtu_probing": "TCP MTU probing"}

// labKeyWords is a lab key in words: a link's loss
// (config.links.r1-r2.shaping.Loss) as "loss on link r1-r2 (percent)",
// a configuration field not in labWords as its name's words
// (config.shaping.QueueLimit: "shaping queue limit").
func labKeyWords(k string) string {
	if w := labWords[k]; w != "" {
		return w
	}
	if mid, ok := strings.CutPrefix(k, "config.links."); ok {
		if link, ok := strings.CutSuffix(mid, ".shaping.Loss"); ok {
			return "loss on link " + link + " (percent)"
		}
	}
	return keyWords(strings.TrimPrefix(k, "config."))
}

// keyWords spells a key as words: its dots, underscores and Go-style
// capitals as spaces, lower case ("shaping.QueueLimit": "shaping queue
// limit"; "TunnelMTU": "tunnel mtu").
func keyWords(k string) string {
	var b strings.Builder
	prev := ' '
	for _, r := range k {
		switch {
		case r == '.' || r == '_':
			r = ' '
		case unicode.IsUpper(r) && prev != ' ' && !unicode.IsUpper(prev):
			b.WriteRune(' ')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}

// dropLossKeys removes a lab's loss settings (how it was emulated, each
// link's share): what the cells' loss note says already.
func dropLossKeys(lab map[string]string) {
	for k := range lab {
		if k == "loss" || strings.HasSuffix(k, ".Loss") {
			delete(lab, k)
		}
	}
}

// lossNotes say the loss the cells of each group both have ran at, where
// A's and B's differ (a cell's loss:, ipv6_loss, the lab's --loss or a
// topology's loss:, as their runs recorded them), with its place: 3% on
// every link is not 3% on r1-r2. One note when every group both have
// differs, and alike ("loss differs: A none; B loss 3% on every link"),
// else one per group that differs (trial9 N9, trial10 T1).
func lossNotes(a, b *Summary) []string {
	inB := protocols(b)
	type pair struct{ a, b string }
	var groups []string
	var diffs []pair
	shared := 0
	for _, g := range protocols(a) {
		if !slices.Contains(inB, g) {
			continue
		}
		shared++
		if d := (pair{lossOf(a, g), lossOf(b, g)}); d.a != d.b && d.a != "" && d.b != "" {
			groups, diffs = append(groups, g), append(diffs, d)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	if len(diffs) == shared && !slices.ContainsFunc(diffs, func(d pair) bool { return d != diffs[0] }) {
		return []string{fmt.Sprintf("loss differs: A %s; B %s", diffs[0].a, diffs[0].b)}
	}
	var notes []string
	for i, g := range groups {
		notes = append(notes, fmt.Sprintf("%s: loss differs: A %s; B %s", g, diffs[i].a, diffs[i].b))
	}
	return notes
}

// lossOf is the loss a group's cells ran at, in words with its place
// ("loss 3% on r1-r2", "IPv6 loss 20% at r1 eth-client ingress"), "none"
// for none, "" when no cell of it has a counted run to say (a result
// still written or cut early): its loss is read from counted runs only.
func lossOf(s *Summary, group string) string {
	seen := map[string]bool{}
	counted := false
	for _, c := range cellsOf(s, group) {
		counted = counted || len(c.Runs) > 0 || c.Completed+c.Failed > 0
		for _, w := range c.Loss.placed() {
			seen[w] = true
		}
	}
	if len(seen) == 0 && !counted {
		return ""
	}
	if len(seen) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ", ")
}

// runOnly are the lab's keys that name one run's lab, not its conditions.
var runOnly = map[string]bool{"name": true, "wire_check_ports": true, "config.Name": true}

// flatLab is a lab's header map with its configuration (JSON) spread into
// one key per setting (config.shaping.Rate), without what names the run.
func flatLab(lab map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range lab {
		var cfg map[string]any
		if k == "config" && json.Unmarshal([]byte(v), &cfg) == nil {
			flatten("config", cfg, out)
			continue
		}
		out[k] = v
	}
	for k := range runOnly {
		delete(out, k)
	}
	// The configuration's own copy of a setting the header names (its
	// TunnelMTU, tunnel_mtu's) is one condition, said once.
	for k := range out {
		if name, ok := strings.CutPrefix(k, "config."); ok && !strings.Contains(name, ".") {
			for top := range lab {
				if top != "config" && sameName(name, top) {
					delete(out, k)
				}
			}
		}
	}
	return out
}

// sameName says whether two keys name the same setting, spelled as a Go
// field (TunnelMTU) or as a header key (tunnel_mtu).
func sameName(a, b string) bool {
	return strings.EqualFold(strings.ReplaceAll(a, "_", ""), strings.ReplaceAll(b, "_", ""))
}

func flatten(prefix string, v any, out map[string]string) {
	if m, ok := v.(map[string]any); ok {
		for k, sub := range m {
			flatten(prefix+"."+k, sub, out)
		}
		return
	}
	if str, ok := v.(string); ok { // as the lab's header says it, unquoted
		out[prefix] = str
		return
	}
	b, _ := json.Marshal(v)
	out[prefix] = string(b)
}

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func orNone(v string, ok bool) string {
	if !ok {
		return "(not recorded)"
	}
	if v == "" {
		return `""`
	}
	return v
}

func scaleOf(s *Summary) float64 {
	if s.Scale == 0 {
		return 1
	}
	return s.Scale
}
