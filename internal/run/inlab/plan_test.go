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
	if _, err := PlanConditions(exp, cfg); err == nil || !strings.Contains(err.Error(), "link_rate reshapes the lab's links, but link client-r1 emulates delay or loss") {
		t.Errorf("link_rate over a lossy link: %v, want refused", err)
	}
	exp.Groups = exp.Groups[:1]
	got, err = PlanConditions(exp, cfg)
	want := "client-r1 egress, both ends (the lab's loss): loss 3% (tc BPF)"
	if lab.HasNetem() == nil {
		want = "" // netem carries it: the header's links say it
	}
	if s := strings.Join(got["http"], "; "); err != nil || s != want {
		t.Errorf("a topology's loss on client-r1: %q, %v; want %q", s, err, want)
	}
}
