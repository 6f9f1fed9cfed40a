package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// pmtuFile is a path MTU run in miniature: an application healthy, with
// Packet Too Big dropped, and mended by MSS clamping, over ipv4 and
// ipv6; a DNS group with fragments dropped whose healthy group is not in
// the file; run 0 a warm-up, and one interrupted run without a record.
func pmtuFile(t *testing.T) *result.File {
	t.Helper()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var spec map[string]any
	json.Unmarshal([]byte(`{"cells":[
		{"protocol":"http","label":"bulk","file":"1M","timeout":"10s"},
		{"protocol":"http","label":"bulk-ptb","file":"1M","timeout":"3s","pmtu":{"ptb_blackhole":"ipv6"}},
		{"protocol":"http","label":"bulk-clamp","file":"1M","pmtu":{"ptb_blackhole":"ipv6","mss_clamp":true}},
		{"protocol":"http","label":"page","objects":4},
		{"protocol":"dns","label":"dns-frag","query":"large.v6lab.test","edns":4096,"pmtu":{"fragments":"drop"}}]}`), &spec)
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: result.FormatVersion, Name: "pmtu", Created: t0, Target: "lab", Baseline: "ipv4", Spec: spec,
		Lab: map[string]string{"r1_r2_mtu": "1400", "pmtu": "every run starts with no path MTU learnt"}}}
	type cell struct {
		group, settings, counts string
		path                    string
		ms                      []float64 // per run, a transaction each
		stall                   bool      // the runs failed as stalls
		dns                     bool
	}
	counts := func(ptb6d, ptb4p uint64) string {
		return "ptb6 dropped " + itoa(int(ptb6d)) + " passed 0, ptb4 dropped 0 passed " + itoa(int(ptb4p)) + ", frag6 dropped 0 passed 0, frag4 dropped 0 passed 0"
	}
	for _, c := range []cell{
		{"bulk", "none", "", "ipv4", []float64{900, 10, 12}, false, false},
		{"bulk", "none", "", "ipv6", []float64{900, 20, 22}, false, false},
		{"bulk-ptb", "ptb_blackhole ipv6", counts(0, 2), "ipv4", []float64{5, 11, 11}, false, false},
		{"bulk-ptb", "ptb_blackhole ipv6", counts(7, 0), "ipv6", []float64{3000, 3000, 3000}, true, false},
		{"bulk-clamp", "ptb_blackhole ipv6, mss_clamp", counts(0, 0), "ipv4", []float64{5, 10, 10}, false, false},
		{"bulk-clamp", "ptb_blackhole ipv6, mss_clamp", counts(0, 0), "ipv6", []float64{5, 25, 27}, false, false},
		{"dns-frag", "fragments drop", "ptb6 dropped 0 passed 0, ptb4 dropped 0 passed 0, frag6 dropped 4 passed 0, frag4 dropped 0 passed 0", "ipv6", []float64{2500, 2500, 2500}, false, true},
	} {
		for run, ms := range c.ms {
			links := map[string]string{"pmtu_settings": c.settings}
			if c.counts != "" {
				links["pmtu"] = c.counts
			}
			r := result.Run{Kind: result.KindRun, Cell: c.group + "/" + c.path + "/1", Protocol: c.group, Path: c.path, Conns: 1, Run: run, Warmup: run == 0, Links: links}
			s := result.Sample{Kind: result.KindSample, Cell: r.Cell, Protocol: c.group, Path: c.path, Conns: 1, Run: run, Warmup: run == 0, TotalNS: int64(ms * 1e6)}
			switch {
			case c.stall:
				s.Err, s.ErrKind = "io: stalled after 1ms", result.ErrStall
				s.Metrics = map[string]float64{"stall_ms": 1, "tcp_mss": 1428, "tcp_rcv_mss": 536, "path_mtu": 1500, "tcp_retrans": 0}
				r.Failed = 1
			case c.dns:
				s.Err, s.ErrKind = "io: timed out", result.ErrTimeout
				s.Metrics = map[string]float64{"dns_tcp": 0, "dns_resent": 1}
				r.Failed = 1
			default:
				s.Marker = "200 OK"
				s.Metrics = map[string]float64{"tcp_mss": 1428, "tcp_rcv_mss": 1328, "path_mtu": 1500, "tcp_retrans": 2}
				r.Completed = 1
			}
			f.Samples = append(f.Samples, s)
			f.Runs = append(f.Runs, r)
		}
	}
	// A sample of a run cut off before its record counts nowhere.
	f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: "bulk/ipv4/1", Protocol: "bulk", Path: "ipv4", Conns: 1, Run: 3, TotalNS: 9e9, Marker: "200 OK"})
	return f
}

// TestPMTUTable: per group and path, the counted runs' completions,
// stalls, times and the time lost against the application's first
// healthy group; what the impairments dropped from the run records; the
// kernel's figures from the samples; and the report's tables.
func TestPMTUTable(t *testing.T) {
	s := Summarize(pmtuFile(t))
	if s.PMTU == nil {
		t.Fatal("no PMTU figures")
	}
	var names []string
	for _, g := range s.PMTU.Groups {
		names = append(names, g.Name+"<"+g.Healthy+">")
	}
	if got := strings.Join(names, " "); got != "bulk<> bulk-ptb<bulk> bulk-clamp<bulk> dns-frag<>" {
		t.Errorf("groups %s", got)
	}
	ptb6 := s.PMTU.find("bulk-ptb", "ipv6", 1)
	if ptb6 == nil || ptb6.N != 2 || ptb6.Completed != 0 || ptb6.Stalled != 2 || ptb6.MeanMS != 3000 || *ptb6.LostMS != 3000-21 || *ptb6.StallMS != 1 ||
		ptb6.Dropped["ptb6"] != 14 || ptb6.RcvMSS != nil {
		t.Errorf("bulk-ptb over ipv6: %+v", ptb6)
	}
	ptb4 := s.PMTU.find("bulk-ptb", "ipv4", 1)
	if ptb4 == nil || ptb4.Completed != 2 || *ptb4.LostMS != 0 || ptb4.Passed["ptb4"] != 4 || *ptb4.RcvMSS != 1328 || *ptb4.Retrans != 2 {
		t.Errorf("bulk-ptb over ipv4: %+v", ptb4)
	}
	if h := s.PMTU.find("bulk", "ipv4", 1); h == nil || h.N != 2 || h.MeanMS != 11 || h.LostMS != nil || h.Dropped != nil {
		t.Errorf("the healthy group over ipv4 (its interrupted run left out): %+v", h)
	}
	if !slices.Contains(s.Notes, "path MTU impairments dropped 14 ICMPv6 Packet Too Big, 0 ICMPv4 fragmentation needed, 8 IPv6 fragments and 0 IPv4 fragments in the counted runs (each group's and path's in the PMTU tables; each run's in its record's links.pmtu)") {
		t.Errorf("notes: %q", s.Notes)
	}
	if d := s.PMTU.find("dns-frag", "ipv6", 1); d == nil || d.LostMS != nil || *d.OverTCP != 0 || *d.Fragmented != 0 || d.Dropped["frag6"] != 8 {
		t.Errorf("dns-frag: %+v", d)
	}
	var b bytes.Buffer
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"bulk-ptb    ptb_blackhole ipv6                bulk  100% +0.00  0% +2.98 (2 stalled)",
		"bulk-clamp  ptb_blackhole ipv6, mss_clamp     bulk  100% +0.00            100% +0.01",
		"dns-frag    fragments drop                       -           -                    0%",
		"bulk-ptb    ipv6      1  2          0        2               1   3000.0  +2979.0        -       -         -        -        -          -    14/0     0/0      0/0      0/0",
		"bulk-clamp  ipv4      1  2          2        0               -     10.0     -1.0     1428    1328      1500      2.0",
		"the link between the routers carries 1400 bytes; every run starts with no path MTU learnt",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.txt lacks\n%s\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PMTU: per path, the share of transactions completed", "PMTU: how each path&#39;s transactions ended", "<td>bulk-clamp</td>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// A run without path MTU records has no table.
	f := pmtuFile(t)
	for i := range f.Runs {
		f.Runs[i].Links = nil
	}
	if s := Summarize(f); s.PMTU != nil {
		t.Errorf("a run without path MTU settings: %+v", s.PMTU)
	}
}

// TestPMTUCountsParse reads a run record's counts and refuses what is not
// one.
func TestPMTUCountsParse(t *testing.T) {
	d, p := parsePMTUCounts("ptb6 dropped 7 passed 1, ptb4 dropped 0 passed 3, frag6 dropped 2 passed 0, frag4 dropped 0 passed 5")
	if d["ptb6"] != 7 || p["ptb6"] != 1 || p["ptb4"] != 3 || d["frag6"] != 2 || p["frag4"] != 5 {
		t.Errorf("dropped %v passed %v", d, p)
	}
	if d, _ := parsePMTUCounts("counters unreadable: no such device"); d != nil {
		t.Errorf("read %v from an error", d)
	}
	if got := signed(ptr(-0.001), 2); got != "+0.00" {
		t.Errorf("a negative zero prints %q", got)
	}
}

// TestMSSInSaysNoneWhenNothingArrived (trial 11): a path whose connections
// were measured (an MSS out) but received no data has MSS in "none", not
// the kernel's default 536; one not measured has "-".
func TestMSSInSaysNoneWhenNothingArrived(t *testing.T) {
	out, in := 1428.0, 1328.0
	for _, c := range []struct {
		p    PMTUPath
		want string
	}{{PMTUPath{MSS: &out}, "none"}, {PMTUPath{MSS: &out, RcvMSS: &in}, "1328"}, {PMTUPath{}, "-"}} {
		if got := rcvMSS(c.p); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}
