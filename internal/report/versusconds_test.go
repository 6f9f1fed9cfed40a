package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareNamesEveryConditionThatDiffers (trial 6): A on 1 Gbit/s
// links without loss, B unshaped with 2% loss, on another kernel: compare
// says so, setting by setting, in text and JSON; the lab's own name and
// ports are not conditions.
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
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"lab loss on every link (percent) differs: A 0; B 2",
		"lab config.shaping.Rate differs: A 1000000000; B 0",
		"lab links differs: A client-r1 1000 Mbit/s, mtu 1500; B client-r1 unshaped, loss 2%, mtu 1500",
		"machine kernel differs: A 6.18; B 6.19",
	}
	if strings.Join(v.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(v.Notes, "\n"), strings.Join(want, "\n"))
	}
	var text, js bytes.Buffer
	VersusText(&text, v)
	VersusJSON(&js, v)
	if !strings.Contains(text.String(), "note: lab loss on every link (percent) differs: A 0; B 2\n") {
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
