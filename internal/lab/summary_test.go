package lab

import (
	"strings"
	"testing"

	"v6lab/internal/lab/bpf"
)

// TestStatusSaysWhichLinksLose (trial10 T11): lab status's configured
// line says where each loss is: a topology's loss on r1-r2 (both routers'
// egress onto it) is "on r1-r2", --loss (every link end) "on every link",
// a single end by its host and direction.
func TestStatusSaysWhichLinksLose(t *testing.T) {
	loss := func(iface string, egress bool, setting uint64) BPFProgram {
		return BPFProgram{Iface: iface, Counts: bpf.Counts{Program: bpf.LossName, Egress: egress, Setting: setting, HasSetting: true}}
	}
	const five, one = 5e4, 1e4 // settings of loss 5%, 1% of every packet
	st := func(progs map[string][]BPFProgram) *Status {
		s := &Status{}
		for _, h := range Hosts {
			s.Hosts = append(s.Hosts, HostStatus{Role: h, BPF: progs[h]})
		}
		return s
	}
	for _, c := range []struct {
		name  string
		progs map[string][]BPFProgram
		want  string
	}{
		{"none", nil, "; no loss;"},
		{"r1-r2 only", map[string][]BPFProgram{R1: {loss("eth-r2", true, five)}, R2: {loss("eth-r1", true, five)}},
			"; loss 5% of every packet on r1-r2;"},
		{"every link", map[string][]BPFProgram{
			Client: {loss("eth-r1", true, one)}, R1: {loss("eth-client", true, one), loss("eth-r2", true, one)},
			R2: {loss("eth-r1", true, one), loss("eth-server", true, one)}, Server: {loss("eth-r2", true, one)}},
			"; loss 1% of every packet on every link;"},
		{"two links, two shares", map[string][]BPFProgram{
			Client: {loss("eth-r1", true, one)}, R1: {loss("eth-client", true, one), loss("eth-r2", true, five)}, R2: {loss("eth-r1", true, five)}},
			"; loss 1% of every packet on client-r1, loss 5% of every packet on r1-r2;"},
		{"one end's ingress", map[string][]BPFProgram{R1: {loss("eth-client", false, one)}},
			"; loss 1% of every packet on client-r1 (r1's ingress);"},
	} {
		if got := st(c.progs).Summary(); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q in it", c.name, got, c.want)
		}
	}
}
