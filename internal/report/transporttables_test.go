package report

import (
	"strings"
	"testing"
)

func stat(mean float64) *MetricStat {
	return &MetricStat{N: 2, Mean: mean, CI95: &[2]float64{mean - 1, mean + 1}}
}

// TestTransportTablesInTheStudysShape: tcp cells of two amounts at one
// window and MSS make a Table 1 with one row per amount and three columns
// per path; udp cells of two rates make a Table 3 (with the sender's lateness per path); a lone amount makes none.
func TestTransportTablesInTheStudysShape(t *testing.T) {
	s := &Summary{}
	for _, p := range []string{"ipv4", "ipv6"} {
		for i, mib := range []float64{20, 10} {
			s.Cells = append(s.Cells, Cell{Protocol: "tcp-" + p + string(rune('a'+i)), Path: p, Conns: 1, Metrics: map[string]*MetricStat{
				"retransmits": stat(0), "bytes_set": stat(mib * (1 << 20)), "window_set": stat(10240), "mss_set": stat(1024),
				"bytes_sent": stat(mib * (1 << 20)), "throughput_mbps": stat(8.192), "transfer_s": stat(mib / 10)}})
		}
		for _, rate := range []float64{10, 1} {
			// Three trials each; ipv6 lost 1, 2, 3 datagrams in them.
			// ipv6's sender ran 30 ms late in its second trial.
			lost := &MetricStat{N: 3, Mean: 0, Runs: []float64{0, 0, 0}, RunIndex: []int{1, 3, 5}}
			late := &MetricStat{N: 3, Mean: 0.5, Runs: []float64{0.5, 0.5, 0.5}}
			if p == "ipv6" {
				lost = &MetricStat{N: 3, Mean: 2, Runs: []float64{1, 2, 3}, RunIndex: []int{2, 4, 6}}
				late = &MetricStat{N: 3, Mean: 10.3, Runs: []float64{0.4, 30, 0.5}}
			}
			s.Cells = append(s.Cells, Cell{Protocol: "udp", Path: p, Conns: 1, Metrics: map[string]*MetricStat{
				"rate_set_mbps": stat(rate), "rcvbuf_set": stat(65536), "datagrams_received": {N: 3, Mean: rate * 5000, Runs: []float64{rate * 5000, rate * 5000, rate * 5000}},
				"lost": lost, "loss_pct": stat(0), "jitter_ms": stat(0.4), "send_late_ms": late}})
		}
	}
	// One amount at another MSS: no table of its own.
	s.Cells = append(s.Cells, Cell{Protocol: "tcp-x", Path: "ipv4", Conns: 1, Metrics: map[string]*MetricStat{
		"retransmits": stat(0), "bytes_set": stat(1 << 20), "mss_set": stat(2048), "transfer_s": stat(1)}})
	secs := TransportTables(s)
	if len(secs) != 3 {
		t.Fatalf("%d tables: %+v", len(secs), secs)
	}
	tcp, udp, trials := secs[0], secs[1], secs[2]
	if !strings.Contains(tcp.Title, "10 KiB window, MSS 1024 bytes") || len(tcp.Head) != 7 || len(tcp.Rows) != 2 {
		t.Fatalf("tcp table %q %v %v", tcp.Title, tcp.Head, tcp.Rows)
	}
	// Rows by amount; 8.192 Mbit/s is 1000 KiB/s; time with its CI.
	if r := tcp.Rows[0]; r[0] != "10" || r[1] != "10240" || r[2] != "1000" || r[3] != "1 (0–2)" || tcp.Head[4] != "ipv6 sent (KiB)" {
		t.Errorf("first row %v (head %v)", r, tcp.Head)
	}
	if !strings.Contains(udp.Title, "Table 3") || len(udp.Rows) != 2 || udp.Rows[0][0] != "1" || udp.Rows[0][1] != "64" || udp.Rows[1][2] != "50000" {
		t.Errorf("udp table %v", udp.Rows)
	}
	// The sender's lateness: the most over the trials, not their mean.
	if h, r := udp.Head[11], udp.Rows[0]; h != "ipv6 sender late, most (ms)" || r[6] != "0.500" || r[11] != "30" {
		t.Errorf("udp table's sender lateness: %q %v", h, r)
	}
	// The study's Table 3: a row per trial, by rate, the paths side by
	// side; a metric without per-trial figures reads "-".
	if len(trials.Rows) != 6 || !strings.Contains(trials.Title, "one row per counted trial") {
		t.Fatalf("trial table %q %v", trials.Title, trials.Rows)
	}
	want := [][]string{{"1", "1", "64", "5000", "0", "-", "-", "0.500", "5000", "1", "-", "-", "0.400"},
		{"2", "1", "64", "5000", "0", "-", "-", "0.500", "5000", "2", "-", "-", "30"}, {"3", "10", "64", "50000", "0", "-", "-", "0.500", "50000", "3", "-", "-", "0.500"}}
	for i, r := range [][]string{trials.Rows[0], trials.Rows[1], trials.Rows[5]} {
		if strings.Join(r, "|") != strings.Join(want[i], "|") {
			t.Errorf("trial row %v, want %v", r, want[i])
		}
	}
}

// TestAClampedMSSIsSaid: an MSS asked above what the path's MTU allows is
// clamped by the kernel; the table says what each path actually used.
func TestAClampedMSSIsSaid(t *testing.T) {
	s := &Summary{}
	for p, eff := range map[string]float64{"ipv4": 1460, "6in4": 1220} {
		for i, mib := range []float64{20, 10} {
			s.Cells = append(s.Cells, Cell{Protocol: "tcp-" + p + string(rune('a'+i)), Path: p, Conns: 1, Metrics: map[string]*MetricStat{
				"retransmits": stat(0), "bytes_set": stat(mib * (1 << 20)), "mss_set": stat(2048), "mss": stat(eff),
				"bytes_sent": stat(mib * (1 << 20)), "throughput_mbps": stat(8), "transfer_s": stat(1)}})
		}
	}
	secs := TransportTables(s)
	if len(secs) == 0 || len(secs[0].Footer) != 1 ||
		secs[0].Footer[0] != "MSS asked 2048 bytes; effective, as the sender's TCP_INFO read it (the path's MTU clamps it): ipv4 1460, 6in4 1220" {
		t.Fatalf("%+v", secs)
	}
	// Where every path used what was asked, nothing is said.
	for i := range s.Cells {
		s.Cells[i].Metrics["mss"] = stat(2048)
	}
	if secs := TransportTables(s); len(secs[0].Footer) != 0 {
		t.Errorf("footer without clamping: %v", secs[0].Footer)
	}
}

// TestTheStudysFiguresAreDrawn: tcp cells at two windows and two amounts
// give one figure per MSS and path with a line per window (Figs 5-8); udp
// cells at two rates and two buffers give a loss and a jitter figure per
// path with a line per buffer (Figs 9-13); each line is styled by its
// setting, not by the path, and the page carries them.
func TestTheStudysFiguresAreDrawn(t *testing.T) {
	s := &Summary{Name: "rubio"}
	for _, p := range []string{"ipv4", "6in4"} {
		for _, w := range []float64{10240, 102400} {
			for _, mib := range []float64{10, 200} {
				s.Cells = append(s.Cells, Cell{Protocol: "tcp", Path: p, Conns: 1, Metrics: map[string]*MetricStat{
					"retransmits": stat(0), "bytes_set": stat(mib * (1 << 20)), "window_set": stat(w), "mss_set": stat(1024),
					"transfer_s": stat(mib / 10 * 102400 / w)}})
			}
		}
		for _, buf := range []float64{65536, 10240} {
			for _, rate := range []float64{100, 1} {
				s.Cells = append(s.Cells, Cell{Protocol: "udp", Path: p, Conns: 1, Metrics: map[string]*MetricStat{
					"rate_set_mbps": stat(rate), "rcvbuf_set": stat(buf), "loss_pct": stat(rate / 2), "jitter_ms": stat(0.1)}})
			}
		}
	}
	plots := TransportPlots(s)
	var ids []string
	for _, p := range plots {
		ids = append(ids, p.ID)
	}
	want := "tcp-window-1024-ipv4 tcp-window-1024-6in4 udp-loss-ipv4 udp-jitter-ipv4 udp-loss-6in4 udp-jitter-6in4"
	if strings.Join(ids, " ") != want {
		t.Fatalf("plots %v, want %s", ids, want)
	}
	tcp := plots[0]
	if len(tcp.Series) != 2 || tcp.Series[0].Name != "10 KiB" || tcp.Series[1].Name != "100 KiB" || tcp.Series[0].Class == tcp.Series[1].Class {
		t.Fatalf("tcp lines %+v", tcp.Series)
	}
	// Ten times the window, a tenth of the time; points by amount in MiB.
	if pts := tcp.Series[0].Points; len(pts) != 2 || pts[0].X != 10 || pts[1].X != 200 || pts[1].Y != 200 || !pts[1].CI {
		t.Errorf("10 KiB line %+v", pts)
	}
	if pts := tcp.Series[1].Points; pts[1].Y != 20 {
		t.Errorf("100 KiB line %+v", pts)
	}
	loss := plots[2]
	if !loss.LogX || len(loss.Series) != 2 || loss.Series[0].Name != "10 KiB" || loss.Series[0].Points[0].X != 1 || loss.Series[0].Points[1].Y != 50 {
		t.Errorf("loss figure %+v", loss)
	}
	svg := loss.SVG()
	if !strings.Contains(svg, `class="series s-k0" data-series="10 KiB"`) || !strings.Contains(svg, `class="legend s-k1"`) {
		t.Errorf("lines not styled by buffer:\n%s", svg)
	}
	var page strings.Builder
	if err := HTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !strings.Contains(page.String(), `data-plot="`+id+`"`) {
			t.Errorf("report.html lacks %s", id)
		}
	}
	// One amount per line is no figure.
	one := &Summary{Cells: s.Cells[:1]}
	if p := TransportPlots(one); len(p) != 0 {
		t.Errorf("a lone point drew %d figures", len(p))
	}
}
