package inlab

import (
	"strings"
	"testing"

	"v6lab/internal/lab"
	"v6lab/internal/run/experiment"
)

// TestPlanConditionsAreTheRecordsWords (a lab dry run said no word of its
// conditions): each cell group's conditions, as its run records will key
// them, from the lab's settings and its own keys; a link_rate over a lab
// whose links emulate loss is refused, as the run refuses it. The lab's
// loss is said where tc BPF carries it (no netem), as the records do.
func TestPlanConditionsAreTheRecordsWords(t *testing.T) {
	exp, err := experiment.Parse("p.yaml", []byte(`name: p
paths: [ipv4, ipv6]
cells:
  - {protocol: http, conns: [1]}
  - {protocol: http, label: lossy, conns: [1], loss: 2, ipv6_udp_loss: 10}
  - {protocol: http, label: v6loss, conns: [1], ipv6_loss: 20, ptb_blackhole: ipv6}
  - {protocol: http, label: slow, conns: [1], link_rate: 10M, background: C2B}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := lab.Config{Links: map[string]lab.Link{"r1-r2": {Shaping: lab.Shaping{Rate: 100e6}}}}
	got, err := PlanConditions(exp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rates := "client-r1 client: tbf 10.0 Mbit/s; client-r1 r1: tbf 10.0 Mbit/s; r1-r2 r1: tbf 10.0 Mbit/s; r1-r2 r2: tbf 10.0 Mbit/s; r2-server r2: tbf 10.0 Mbit/s; r2-server server: tbf 10.0 Mbit/s"
	own := "r1-r2 r1: tbf 100.0 Mbit/s; r1-r2 r2: tbf 100.0 Mbit/s"
	for group, want := range map[string]string{
		"http":   own,
		"lossy":  "r1 eth-client ingress: IPv6 UDP loss 10%, DNS spared (UDP port 53 and the lab's DNS servers' ports, as they start; tc BPF); r1-r2 egress, both ends: loss 2% (tc BPF); " + own,
		"v6loss": "path MTU: ptb_blackhole ipv6; r1 eth-client ingress: IPv6 loss 20% (tc BPF); " + own,
		"slow":   rates + "; background: C2B",
	} {
		if s := strings.Join(got[group], "; "); s != want {
			t.Errorf("%s:\n got %s\nwant %s", group, s, want)
		}
	}
	cfg.Links["client-r1"] = lab.Link{Shaping: lab.Shaping{Loss: 3}}
	// trial11 L11: the refusal names the file, line and group, as the
	// file's own errors do.
	want := "p.yaml:7: cells[3].link_rate: 10M (cell group slow) reshapes the lab's links, but the lab's link client-r1 emulates delay or loss"
	if _, err := PlanConditions(exp, cfg); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("link_rate over a lossy link: %v, want %q…", err, want)
	}
	exp.Groups = exp.Groups[:1]
	got, err = PlanConditions(exp, cfg)
	want = "client-r1 egress, both ends (the lab's loss): loss 3% (tc BPF)"
	if lab.HasNetem() == nil {
		want = "" // netem carries it: the header's links say it
	}
	if s := strings.Join(got["http"], "; "); err != nil || s != want {
		t.Errorf("a topology's loss on client-r1: %q, %v; want %q", s, err, want)
	}
}

// TestWritePlanSaysTheLab: a lab dry run's lines: the links as the
// header says them, the 6in4 tunnel where a cell runs over it, the
// congestion control, a bare server host, and each group's conditions.
func TestWritePlanSaysTheLab(t *testing.T) {
	exp, err := experiment.Parse("w.yaml", []byte("name: w\npaths: [ipv4, 6in4]\ncells:\n  - {protocol: http, http_version: 2, conns: [1], loss: 2}\n  - {protocol: dns, conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := lab.Config{TunnelMTU: 1280, Tunnel: "bpf", Congestion: "reno", BareServer: true,
		Links: map[string]lab.Link{"r1-r2": {Shaping: lab.Shaping{Rate: 10e6}}}}
	var b strings.Builder
	if err := WritePlan(&b, exp, cfg); err != nil {
		t.Fatal(err)
	}
	want := `lab links: client-r1 unshaped, mtu 1500; r1-r2 10 Mbit/s, mtu 1500; r2-server unshaped, mtu 1500
6in4 tunnel: bpf, MTU 1280
TCP congestion control in the lab: reno
server host: bare (SACK, timestamps and window scaling off)
HTTP/2 conditions (as its runs will record them): r1-r2 egress, both ends: loss 2% (tc BPF)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
