package report

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestAGroupsOwnConditionsAreSaidOnce: the trial's group with ipv6_loss
// 20 (its runs' records: "IPv6 loss 20% (tc BPF): N IPv6 packets dropped
// in the run", N differing run to run) is said once, without the counts,
// beside the group's tables in report.txt and report.html; the path MTU
// counters are not a condition, "none" is none, and so is an unshaped
// link end's "noqueue" (trial11 M3: an older result's group without a
// rate of its own beside a link_rate group recorded six).
func TestAGroupsOwnConditionsAreSaidOnce(t *testing.T) {
	f := build(baseMS, otherMS)
	for i := range f.Runs {
		r := &f.Runs[i]
		r.Links = map[string]string{"r1 eth-client ingress": fmt.Sprintf("IPv6 loss 20%% (tc BPF): %d IPv6 packets dropped in the run", i),
			"pmtu": "ptb6 dropped 0 passed 2", "pmtu_settings": "none", "client-r1 client": "noqueue"}
	}
	s := Summarize(f)
	if want := []string{"r1 eth-client ingress: IPv6 loss 20% (tc BPF)"}; !slices.Equal(s.Conditions["http"], want) {
		t.Fatalf("conditions %q, want %q", s.Conditions, want)
	}
	line := "HTTP conditions (as its runs recorded them): r1 eth-client ingress: IPv6 loss 20% (tc BPF)"
	var b bytes.Buffer
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	// Said once with where and how (In short and the means table add
	// "(IPv6 loss 20%)" and the counts: TestLossCellsSayWhatTheLossDid).
	if n := strings.Count(b.String(), "IPv6 loss 20% (tc BPF)"); n != 1 || !strings.Contains(b.String(), line) {
		t.Errorf("report.txt says the loss %d times, wants %q once:\n%s", n, line, b.String())
	}
	b.Reset()
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "IPv6 loss 20% (tc BPF)"); n != 1 {
		t.Errorf("report.html says the loss %d times", n)
	}
	if s := Summarize(build(baseMS, otherMS)); s.Conditions != nil {
		t.Errorf("conditions without any: %q", s.Conditions)
	}
}

// TestABackgroundLevelIsAConditionWhereTheGroupHasOne: the background's
// level where every cell of the group ran at it; a sweep over levels (the
// background table's) is not one group condition.
func TestABackgroundLevelIsAConditionWhereTheGroupHasOne(t *testing.T) {
	got := condAcc{}.finish([]Cell{
		{Protocol: "http", Path: "ipv4", Background: &CellBackground{Level: "50%"}},
		{Protocol: "http", Path: "ipv6", Background: &CellBackground{Level: "50%"}},
		{Protocol: "dns", Path: "ipv4", Background: &CellBackground{Level: "10%"}},
		{Protocol: "dns", Path: "ipv4", Conns: 2, Background: &CellBackground{Level: "90%"}},
		{Protocol: "tcp", Path: "ipv4"}})
	if len(got) != 1 || !slices.Equal(got["http"], []string{"background: 50%"}) {
		t.Errorf("conditions %q", got)
	}
}

// TestPathMTUSettingsAreAConditionByName: the pmtu_settings entry reads
// "path MTU: …"; its counters (pmtu) are not a condition.
func TestPathMTUSettingsAreAConditionByName(t *testing.T) {
	a := condAcc{}
	a.Run(&result.Run{Protocol: "http-bulk-ptb", Links: map[string]string{"pmtu_settings": "ptb_blackhole ipv6, mss_clamp", "pmtu": "ptb6 dropped 3 passed 0"}})
	if got := a.finish(nil)["http-bulk-ptb"]; !slices.Equal(got, []string{"path MTU: ptb_blackhole ipv6, mss_clamp"}) {
		t.Errorf("conditions %q", got)
	}
}

// TestLossCellsSayWhatTheLossDid (trial8 F6): cells that ran at 1% loss
// get the packets it dropped over their counted runs (warm-ups left out)
// as a row of the means table, and say the loss in "In short", in
// report.html's and in results.csv's loss and loss_dropped columns; one
// loss with its place, as two are (trial10b).
func TestLossCellsSayWhatTheLossDid(t *testing.T) {
	f := build(baseMS, otherMS)
	for i := range f.Runs {
		r := &f.Runs[i]
		n := 0
		if r.Path == "ipv6" {
			n = 3
		}
		if r.Warmup {
			n = 100
		}
		r.Links = map[string]string{"r1-r2 egress, both ends": fmt.Sprintf("loss 1%% (tc BPF): %d packets dropped in the run", n)}
	}
	s := Summarize(f)
	var v4, v6 *CellLoss
	for _, c := range s.Cells {
		if c.Path == "ipv4" {
			v4 = c.Loss
		} else {
			v6 = c.Loss
		}
	}
	want := func(n int64) CellLoss {
		return CellLoss{"loss 1%", n, 10, []LossPart{{"loss 1%", "r1-r2", n}}}
	}
	if v4 == nil || v6 == nil || !reflect.DeepEqual(*v4, want(0)) || !reflect.DeepEqual(*v6, want(30)) {
		t.Fatalf("losses ipv4 %+v ipv6 %+v", v4, v6)
	}
	var b bytes.Buffer
	Text(&b, s)
	for _, want := range []string{"dropped by loss    0 in 10 runs", "dropped by loss   30 in 10 runs", "\n  ipv6 (loss 1% on r1-r2): "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.txt lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	HTML(&b, s)
	if !strings.Contains(b.String(), "ipv6 (loss 1% on r1-r2)</strong>") {
		t.Errorf("report.html's In short does not say the loss and its place")
	}
	csvOf := func(s *Summary) []map[string]string {
		var b bytes.Buffer
		CSV(&b, s)
		return csvRows(t, b.String())
	}
	rows := csvOf(s)
	if len(rows) != 2 || rows[0]["loss"] != "loss 1% on r1-r2" || rows[0]["loss_dropped"] != "0" || rows[1]["loss_dropped"] != "30" {
		t.Errorf("results.csv rows %v", rows)
	}
	if rows := csvOf(Summarize(build(baseMS, otherMS))); rows[0]["loss"] != "" || rows[0]["loss_dropped"] != "" {
		t.Errorf("results.csv without loss: %v", rows)
	}
}

// TestVersionsSideBySideSayTheLoss (trial8 F6): the HTTP versions table
// and In short (groups named) name the loss beside each version that ran
// at one.
func TestVersionsSideBySideSayTheLoss(t *testing.T) {
	s := &Summary{Baseline: "ipv4", HTTPVersions: map[string]string{"http/2": "2", "http/3": "3"}}
	for _, g := range []string{"http/2", "http/3"} {
		s.Cells = append(s.Cells, Cell{Protocol: g, Path: "ipv6", Conns: 10, MeanMS: f64(5), Loss: &CellLoss{Condition: "loss 3%", Dropped: 7, Runs: 2}})
	}
	s.Comparisons = []Comparison{cmpOf("http/2", "ipv6", 10, 1, 0.9)}
	if lines := VerdictLines(s); len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "HTTP/2 over ipv6 (loss 3%): ") {
		t.Errorf("In short of named groups: %q", lines)
	}
	sec, ok := VersionsTable(s)
	if !ok || len(sec.Rows) != 10 || sec.Rows[0][1] != "HTTP/2 (loss 3%)" || sec.Rows[5][1] != "HTTP/3 (loss 3%)" {
		t.Errorf("side by side %q", sec.Rows)
	}
}
