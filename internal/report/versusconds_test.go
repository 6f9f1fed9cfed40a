package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestCompareNamesEveryConditionThatDiffers (trial 6): A on 1 Gbit/s
// links without loss, B unshaped with 2% loss, on another kernel: compare
// says so, setting by setting, in text and JSON, each once; the lab's own
// name and ports are not conditions.
func TestCompareNamesEveryConditionThatDiffers(t *testing.T) {
	a := &Summary{Target: "lab", Lab: map[string]string{
		"name": "runa", "wire_check_ports": "x=1", "tunnel": "bpf", "tunnel_mtu": "1480",
		"links":  "client-r1 1000 Mbit/s, mtu 1500",
		"config": `{"Name":"runa","shaping":{"Rate":1000000000,"Loss":0}}`,
	}, Machine: map[string]string{"kernel": "6.18", "tool": "v6lab 1", "host": "vm"}}
	b := &Summary{Target: "lab", Lab: map[string]string{
		"name": "runb", "wire_check_ports": "x=2", "tunnel": "bpf", "tunnel_mtu": "1480",
		"links":  "client-r1 unshaped, loss 2%, mtu 1500",
		"config": `{"Name":"runb","shaping":{"Rate":0,"Loss":2}}`,
	}, Machine: map[string]string{"kernel": "6.19", "tool": "v6lab 1", "host": "vm"}}
	v := CompareSummaries("A", a, "B", b)
	// The links line says the rate and the loss; the configuration's
	// fields (config.shaping.Rate) do not say them again (trial10 T9).
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"lab links differs: A client-r1 1000 Mbit/s, mtu 1500; B client-r1 unshaped, loss 2%, mtu 1500",
		"machine kernel differs: A 6.18; B 6.19",
	}
	if strings.Join(v.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(v.Notes, "\n"), strings.Join(want, "\n"))
	}
	var text, js bytes.Buffer
	VersusText(&text, v)
	VersusJSON(&js, v)
	if !strings.Contains(text.String(), "note: lab links differs: A client-r1 1000 Mbit/s, mtu 1500; B client-r1 unshaped, loss 2%, mtu 1500\n") {
		t.Errorf("text:\n%s", text.String())
	}
	var back Versus
	if json.Unmarshal(js.Bytes(), &back) != nil || len(back.Notes) != len(want) {
		t.Errorf("json:\n%s", js.String())
	}
	if same := CompareSummaries("A", a, "A", a); len(same.Notes) != 0 {
		t.Errorf("a result against itself: %q", same.Notes)
	}
}

// TestCompareNamesWhatTheCellsMeasured (trial4 F4): a cell "http" of
// HTTP/1.1 against one of HTTP/3, or of new connections against kept
// ones, is paired by name but measured another thing: compare says which,
// from what the transactions did.
func TestCompareNamesWhatTheCellsMeasured(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	cell := func(neg string, conn *ConnFacts) Cell {
		return Cell{Protocol: "http", Path: "ipv4", Conns: 1, MeanMS: ms(3), Completed: 48, Negotiated: map[string]int{neg: 48}, Conn: conn}
	}
	h1 := &Summary{HTTPVersions: map[string]string{"http": "1.1"}, Engines: map[string]string{"http": "go"}, Cells: []Cell{cell("http/1.1", &ConnFacts{TLS: 48})}}
	h3 := &Summary{HTTPVersions: map[string]string{"http": "3"}, Engines: map[string]string{"http": "quic-go"}, Cells: []Cell{cell("h3", &ConnFacts{TLS: 48, Resumed: 48, ZeroRTT: 46})}}
	v := CompareSummaries("A", h1, "B", h3)
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"http: HTTP version differs: A http/1.1; B h3",
		"http: engine differs: A go; B quic-go",
		"http: connections differs: A new connections, full handshakes; B new connections, TLS resumed with 0-RTT",
	}
	if strings.Join(v.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(v.Notes, "\n"), strings.Join(want, "\n"))
	}
	h2 := &Summary{HTTPVersions: map[string]string{"http": "2"}, Cells: []Cell{cell("h2", nil)}}
	kept := &Summary{HTTPVersions: map[string]string{"http": "2"}, Cells: []Cell{cell("h2", &ConnFacts{Kept: 48})}}
	v = CompareSummaries("A", h2, "B", kept)
	if got := strings.Join(v.Notes, "\n") + "\n"; !strings.Contains(got, "http: connections differs: A new connections, full handshakes; B kept connections (keepalive)\n") {
		t.Errorf("keepalive notes:\n%s", got)
	}
	if same := CompareSummaries("A", h3, "A", h3); len(same.Notes) != 0 {
		t.Errorf("a result against itself: %q", same.Notes)
	}
}

// TestCompareSaysEachServerAndTheTunnelMTUOnce (trial8 F5, F7): an
// embedded-server result against a real-server one gives one note per
// server role, the real one marked; a tunnel MTU that differs is one note
// in words, not also as the lab configuration's Go field.
func TestCompareSaysEachServerAndTheTunnelMTUOnce(t *testing.T) {
	a := &Summary{Target: "lab", Lab: map[string]string{"tunnel": "bpf", "tunnel_mtu": "1480", "config": `{"TunnelMTU":1480,"Tunnel":"bpf"}`},
		Servers: map[string]string{"dns": "embedded (miekg/dns)", "h3": "embedded (quic-go)"}}
	b := &Summary{Target: "lab", Lab: map[string]string{"tunnel": "bpf", "tunnel_mtu": "1280", "config": `{"TunnelMTU":1280,"Tunnel":"bpf"}`},
		Servers: map[string]string{"dns (real)": "unbound 1.17.1", "h3 (real)": "Caddy 2.6.2"}}
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"lab 6in4 tunnel MTU differs: A 1480; B 1280",
		"servers dns differs: A embedded (miekg/dns); B unbound 1.17.1 (real)",
		"servers h3 differs: A embedded (quic-go); B Caddy 2.6.2 (real)",
	}
	if got := CompareSummaries("A", a, "B", b).Notes; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompareNotesALossThatDiffers (trial9 N9, N4): a clean result against
// one whose cells ran at 3% loss (the lab-wide --loss, or each cell's
// loss:) is one note, in words: not the lab's Go field nor how the loss
// was emulated. Groups that differ otherwise get a note each.
func TestCompareNotesALossThatDiffers(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	cell := func(group, path string, loss string) Cell {
		c := Cell{Protocol: group, Path: path, Conns: 1, MeanMS: ms(3), Completed: 48}
		if loss != "" {
			c.Loss = &CellLoss{Condition: loss, Dropped: 40, Runs: 2}
		}
		return c
	}
	clean := &Summary{Lab: map[string]string{"config": `{"shaping":{"Loss":0}}`},
		Cells: []Cell{cell("http/2", "ipv4", ""), cell("http/2", "ipv6", ""), cell("http/3", "ipv4", "")}}
	lossy := &Summary{Lab: map[string]string{"config": `{"shaping":{"Loss":3}}`, "loss": "bpf"},
		Cells: []Cell{cell("http/2", "ipv4", "loss 3%"), cell("http/2", "ipv6", "loss 3%"), cell("http/3", "ipv4", "loss 3%")}}
	v := CompareSummaries("A", clean, "B", lossy)
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"loss differs: A none; B loss 3%",
	}
	if strings.Join(v.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(v.Notes, "\n"), strings.Join(want, "\n"))
	}
	// A cell's own loss: in B's http/2 only, IPv6's in its http/3.
	mixed := &Summary{Cells: []Cell{cell("http/2", "ipv4", "loss 3%"), cell("http/2", "ipv6", "loss 3%"), cell("http/3", "ipv4", "IPv6 loss 20%")}}
	v = CompareSummaries("A", &Summary{Cells: clean.Cells}, "B", mixed)
	want = []string{
		"A and B were measured under different conditions (below): their differences include these",
		"http/2: loss differs: A none; B loss 3%",
		"http/3: loss differs: A none; B IPv6 loss 20%",
	}
	if strings.Join(v.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(v.Notes, "\n"), strings.Join(want, "\n"))
	}
	if same := CompareSummaries("A", lossy, "B", lossy); len(same.Notes) != 0 {
		t.Errorf("a lossy result against itself: %q", same.Notes)
	}
}

// TestComparePairsTheServersThatServeTheSameRoles (trial9 N3): two result
// directories, one of the embedded servers, one of the real ones, whose
// header records what each real server stands for (nginx's http with TLS:
// http and https; the DNS64 Unbound: the embedded dns server's DNS64
// view). Compare says each set of servers once, paired, and never that
// the embedded result did not record a server it had.
func TestComparePairsTheServersThatServeTheSameRoles(t *testing.T) {
	dirOf := func(servers map[string]string, roles map[string][]string) string {
		f := build(baseMS, otherMS)
		f.Header.Servers, f.Header.ServerRoles = servers, roles
		return resultDir(t, f)
	}
	embedded := dirOf(map[string]string{
		"dns":   "embedded (miekg/dns; DNS64 on the nat64 path's)",
		"http":  "embedded (v6lab's own HTTP/1.1)",
		"https": "embedded (Go crypto/tls)",
		"h3":    "embedded (quic-go)",
	}, nil)
	realServers := map[string]string{
		"dns (real)":   "unbound 1.17.1",
		"dns64 (real)": "unbound 1.17.1 dns64",
		"http (real)":  "nginx/1.22.1, https on 443",
		"h3 (real)":    "Caddy 2.6.2",
	}
	real := dirOf(realServers, map[string][]string{"http (real)": {"http", "https"}, "dns64 (real)": {"dns"}})
	_, a, err := Load(embedded)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := Load(real)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"servers dns, dns64 differ: A embedded (miekg/dns; DNS64 on the nat64 path's); B dns: unbound 1.17.1 (real); dns64: unbound 1.17.1 dns64 (real)",
		"servers h3 differs: A embedded (quic-go); B Caddy 2.6.2 (real)",
		"servers http, https differ: A http: embedded (v6lab's own HTTP/1.1); https: embedded (Go crypto/tls); B nginx/1.22.1, https on 443 (real)",
	}
	if got := CompareSummaries("A", a, "B", b).Notes; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if same := CompareSummaries("B", b, "B", b); len(same.Notes) != 0 {
		t.Errorf("a result against itself: %q", same.Notes)
	}
	// A server only one result had is not "(not recorded)" in the other,
	// which recorded its servers: it had no such server.
	noH3 := &Summary{Servers: map[string]string{"dns": a.Servers["dns"], "http": a.Servers["http"]}}
	got := strings.Join(CompareSummaries("A", noH3, "B", b).Notes, "\n")
	if strings.Contains(got, "not recorded") || !strings.Contains(got, "servers h3 differs: A no such server; B Caddy 2.6.2 (real)") ||
		!strings.Contains(got, "servers http differs: A embedded (v6lab's own HTTP/1.1); B nginx") {
		t.Errorf("without h3 and https:\n%s", got)
	}
}

// TestCompareOfAGroupWithNoCountedRunSaysNoFalseCondition (trial10b N1):
// a result still written (or cut early) whose group has no counted run
// yet has no loss and no negotiated version to read: compare says no
// "loss differs: … B none" (its loss is read from counted runs) and no
// "HTTP version differs: A h2; B 2" (its file's spelling of the same).
func TestCompareOfAGroupWithNoCountedRunSaysNoFalseCondition(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	done := &Summary{HTTPVersions: map[string]string{"http/2": "2"}, Cells: []Cell{{Protocol: "http/2", Path: "ipv4", Conns: 4, MeanMS: ms(3),
		Runs: []float64{3}, Completed: 48, Negotiated: map[string]int{"h2": 48}, Loss: &CellLoss{Condition: "loss 3%", Runs: 1, Each: []LossPart{{Condition: "loss 3%", Where: "every link"}}}}}}
	early := &Summary{HTTPVersions: map[string]string{"http/2": "2"}, Cells: []Cell{{Protocol: "http/2", Path: "ipv4", Conns: 4}}}
	v := CompareSummaries("A", done, "B", early)
	for _, n := range v.Notes {
		if strings.Contains(n, "loss differs") || strings.Contains(n, "HTTP version differs") {
			t.Errorf("a group with no counted run: %q", n)
		}
	}
	// Once B counts a clean run, its loss is none: said.
	early.Cells[0].Runs, early.Cells[0].Completed = []float64{3}, 48
	v = CompareSummaries("A", done, "B", early)
	if got := strings.Join(v.Notes, "\n"); !strings.Contains(got, "loss differs: A loss 3% on every link; B none") {
		t.Errorf("a clean counted run against a lossy one:\n%s", got)
	}
}

// labHeader is a lab's header as v6lab writes it (run 2026-11-27), its
// configuration's links at loss percent.
func labHeader(loss int) map[string]string {
	links := "client-r1 unshaped, mtu 1500; r1-r2 unshaped, mtu 1500; r2-server unshaped, mtu 1500"
	h := map[string]string{
		"464xlat":          "CLAT (RFC 6877, tc BPF on the client's link): IPv4 from 192.0.0.4 …",
		"config":           fmt.Sprintf(`{"Name":"run031d6dcb","TunnelMTU":1480,"Tunnel":"","shaping":{"Rate":0,"QueueLimit":0,"Delay":0,"Jitter":0,"Loss":%d},"congestion":"cubic","nat64":{"prefix":"64:ff9b::/96"}}`, loss),
		"congestion":       "cubic",
		"dslite":           "B4 (RFC 6333, tc BPF on the client's link): …",
		"links":            links,
		"name":             "run031d6dcb",
		"nat64":            "stateless translator (SIIT, RFC 7915) in tc BPF on r1: … prefix 64:ff9b::/96 …",
		"pcap":             "false",
		"topology":         "client - r1 - r2 - server (veth), 6in4 tunnel r1-r2",
		"tunnel":           "bpf",
		"tunnel_hook":      "tcx",
		"tunnel_mtu":       "1480",
		"wire_check":       "r1 eth-r2",
		"wire_check_ports": "dns=42423 http=36643",
	}
	if loss > 0 {
		h["links"] = strings.ReplaceAll(links, "unshaped, ", fmt.Sprintf("unshaped, loss %d%%, ", loss))
		h["loss"] = "bpf"
	}
	return h
}

// goField matches a lab key spelled as a Go field or the configuration's
// JSON path: config.…, or a capitalized word after a dot.
var goField = regexp.MustCompile(`config\.|\.[A-Z][a-z]`)

// TestCompareOfALabAndALoopbackResultSaysTheLabOnce (trial10 T9): a lab
// result against a loopback one, or one against real hosts, says where
// each ran and where the lab's settings are, in one note: none of the
// lab's sixteen settings set one by one against "(not recorded)", nor
// named as Go fields.
func TestCompareOfALabAndALoopbackResultSaysTheLabOnce(t *testing.T) {
	lab := &Summary{Target: "lab", Lab: labHeader(0), Machine: map[string]string{"client_spin": "250µs"}}
	for _, other := range []*Summary{{Target: "loopback", Machine: map[string]string{"client_spin": "0s"}}, {Target: "hosts", Machine: map[string]string{"client_spin": "0s"}}} {
		where := map[string]string{"loopback": "on loopback", "hosts": "against hosts"}[other.Target]
		want := []string{
			"A ran in the lab, B " + where + ": their differences include the targets' (A's lab, its links, tunnel and translators: A's report header)",
			"A and B were measured under different conditions (below): their differences include these",
			"machine client spin (--spin) differs: A 250µs; B 0s",
		}
		if got := CompareSummaries("A", lab, "B", other).Notes; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("notes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := strings.Join(CompareSummaries("B", other, "A", lab).Notes, "\n"); !strings.Contains(got, "(B's lab, its links, tunnel and translators: B's report header)") ||
			strings.Contains(got, "lab ") && strings.Contains(got, "differs: A") && strings.Contains(got, "not recorded") {
			t.Errorf("the other way round:\n%s", got)
		}
	}
}

// TestCompareOfTwoLabsSaysEachSettingInWords (trial10 T9): two labs that
// differ in every setting say each in words, never as the
// configuration's Go fields, and a setting one lab lacks as "none"; the
// links once, by their line.
func TestCompareOfTwoLabsSaysEachSettingInWords(t *testing.T) {
	a, b := labHeader(0), labHeader(0)
	b["config"] = `{"Name":"runb","TunnelMTU":1480,"Tunnel":"","shaping":{"Rate":10000000,"QueueLimit":65536,"Delay":20000000,"Jitter":0,"Loss":0},"congestion":"bbr","nat64":{"prefix":"64:ff9b:1::/96"},"pmtu":{"mss_clamp":true},"bpf_hook":"clsact"}`
	b["links"] = "client-r1 10 Mbit/s, queue 65536 B, delay 20ms, mtu 1500; r1-r2 10 Mbit/s, queue 65536 B, delay 20ms, mtu 1500; r2-server 10 Mbit/s, queue 65536 B, delay 20ms, mtu 1500"
	b["nat64"], b["congestion"], b["pcap"], b["tunnel_hook"] = "stateless translator … prefix 64:ff9b:1::/96 …", "bbr", "true", "clsact"
	b["generators"] = "gen4c, gen6c on r1; gen4s, gen6s on r2"
	got := CompareSummaries("A", &Summary{Target: "lab", Lab: a}, "B", &Summary{Target: "lab", Lab: b}).Notes
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"lab BPF hook asked for differs: A none; B clsact",
		"lab MSS clamp (--mss-clamp) differs: A none; B true",
		"lab TCP congestion control differs: A cubic; B bbr",
		"lab background traffic hosts differs: A none; B gen4c, gen6c on r1; gen4s, gen6s on r2",
		"lab links differs: A " + a["links"] + "; B " + b["links"],
		"lab NAT64 differs: A " + a["nat64"] + "; B " + b["nat64"],
		"lab packet capture (--pcap) differs: A false; B true",
		"lab 6in4 tunnel's BPF hook differs: A tcx; B clsact",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, n := range got {
		if goField.MatchString(n[:strings.Index(n+" differs", " differs")]) {
			t.Errorf("a key as a Go field: %q", n)
		}
	}
}

// TestCompareSaysALossOnce (trial10 T9, trial10b): a clean lab against one
// at 3% on every link says the loss once, "loss differs", not again in
// the links line; a rate that differs besides is said by the links line
// without the loss.
func TestCompareSaysALossOnce(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	cells := func(loss string) []Cell {
		c := Cell{Protocol: "http", Path: "ipv4", Conns: 1, MeanMS: ms(3), Runs: []float64{3}, Completed: 48}
		if loss != "" {
			c.Loss = &CellLoss{Condition: "loss 3%", Runs: 1, Each: []LossPart{{Condition: "loss 3%", Where: "every link"}}}
		}
		return []Cell{c}
	}
	clean := &Summary{Target: "lab", Lab: labHeader(0), Cells: cells("")}
	lossy := &Summary{Target: "lab", Lab: labHeader(3), Cells: cells("loss 3%")}
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"loss differs: A none; B loss 3% on every link",
	}
	if got := CompareSummaries("A", clean, "B", lossy).Notes; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	lossy.Lab["links"] = strings.ReplaceAll(lossy.Lab["links"], "unshaped", "10 Mbit/s")
	got := strings.Join(CompareSummaries("A", clean, "B", lossy).Notes, "\n")
	if !strings.Contains(got, "lab links differs: A "+clean.Lab["links"]+"; B client-r1 10 Mbit/s, mtu 1500; r1-r2 10 Mbit/s, mtu 1500; r2-server 10 Mbit/s, mtu 1500") ||
		strings.Count(got, "3%") != 1 {
		t.Errorf("a rate besides the loss:\n%s", got)
	}
}

// TestCompareNamesTheDefaultVersionAsSpoken (trial10 T9): a group that
// names no http_version spoke HTTP/1.1, the default: against the same
// group's HTTP/1.1 with new connections in the clear, no note; against
// its HTTP/2, the version and what the connections did, in words.
func TestCompareNamesTheDefaultVersionAsSpoken(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	cell := func(neg map[string]int, conn *ConnFacts) []Cell {
		return []Cell{{Protocol: "web", Path: "ipv4", Conns: 1, MeanMS: ms(3), Runs: []float64{3}, Completed: 48, Negotiated: neg, Conn: conn}}
	}
	proto := map[string]string{"web": "http"}
	plain := &Summary{groupProto: proto, plainSpec: []string{"web"}, Cells: cell(nil, nil)}
	h11 := &Summary{groupProto: proto, plainSpec: []string{"web"}, HTTPVersions: map[string]string{"web": "1.1"}, HTTPCleartext: []string{"web"},
		Cells: cell(map[string]int{"http/1.1": 48}, nil)}
	for _, v := range []*Versus{CompareSummaries("A", h11, "B", plain), CompareSummaries("A", plain, "B", h11)} {
		if len(v.Notes) != 0 {
			t.Errorf("HTTP/1.1 against the default: %q", v.Notes)
		}
	}
	h2 := &Summary{groupProto: proto, HTTPVersions: map[string]string{"web": "2"}, Cells: cell(map[string]int{"h2": 48}, &ConnFacts{TLS: 48})}
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"web: HTTP version differs: A h2; B http/1.1 (no http_version named: the default)",
		"web: connections differs: A new connections, full handshakes; B new connections, no TLS",
	}
	if got := CompareSummaries("A", h2, "B", plain).Notes; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A label that named a group of another protocol in B: its version
	// is not guessed.
	other := &Summary{groupProto: map[string]string{"web": "dns"}, Cells: cell(nil, nil)}
	if got := strings.Join(CompareSummaries("A", h2, "B", other).Notes, "\n"); strings.Contains(got, "http/1.1") {
		t.Errorf("another protocol's group given HTTP/1.1:\n%s", got)
	}
}

// TestCompareOfLabAndLoopbackSaysNotTheServersPlace: a lab result's
// servers differ from a loopback one's only by "in the server namespace"
// (the lab's header says where they ran): the note that A ran in the lab
// and B on loopback says it, and no servers note repeats it; a server
// that differs in more still gets one (trial11 LOW 6).
func TestCompareOfLabAndLoopbackSaysNotTheServersPlace(t *testing.T) {
	dns := "embedded (miekg/dns messages; UDP answered on a thread blocked in recvfrom, TCP by miekg/dns)"
	lab := &Summary{Target: "lab", Servers: map[string]string{"dns": dns + " in the server namespace", "http": "embedded (Go net/http) in the server namespace", "ftp": "vsftpd 3, a process in the server namespace"}}
	lo := &Summary{Target: "loopback", Servers: map[string]string{"dns": dns, "http": "embedded (v6lab's own HTTP/1.1)", "ftp": "vsftpd 3"}}
	got := strings.Join(CompareSummaries("A", lab, "B", lo).Notes, "\n")
	if !strings.HasPrefix(got, "A ran in the lab, B on loopback") || strings.Contains(got, "servers dns") || strings.Contains(got, "servers ftp") {
		t.Errorf("the servers' place said again:\n%s", got)
	}
	if !strings.Contains(got, "servers http differs: A embedded (Go net/http) in the server namespace; B embedded (v6lab's own HTTP/1.1)") {
		t.Errorf("a server that differs in more:\n%s", got)
	}
	lo.Target = "lab"
	if got := strings.Join(CompareSummaries("A", lab, "B", lo).Notes, "\n"); !strings.Contains(got, "servers dns differs") {
		t.Errorf("two labs' servers that differ in place alone:\n%s", got)
	}
}
