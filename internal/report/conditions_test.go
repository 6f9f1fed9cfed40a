package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestAGroupsOwnConditionsAreSaidOnce: the trial's group with ipv6_loss
// 20 (its runs' records: "IPv6 loss 20% (tc BPF): N IPv6 packets dropped
// in the run", N differing run to run) is said once, without the counts,
// beside the group's tables in report.txt and report.html; the path MTU
// counters are not a condition, "none" is none.
func TestAGroupsOwnConditionsAreSaidOnce(t *testing.T) {
	f := build(baseMS, otherMS)
	for i := range f.Runs {
		r := &f.Runs[i]
		r.Links = map[string]string{"r1 eth-client ingress": fmt.Sprintf("IPv6 loss 20%% (tc BPF): %d IPv6 packets dropped in the run", i),
			"pmtu": "ptb6 dropped 0 passed 2", "pmtu_settings": "none"}
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
	if n := strings.Count(b.String(), "IPv6 loss 20%"); n != 1 || !strings.Contains(b.String(), line) {
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
