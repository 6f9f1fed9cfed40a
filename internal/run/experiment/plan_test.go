package experiment

import (
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestDryRunSaysSustainedCountsAreUnknown (trial12 M8): a sustained
// cell's users repeat transactions for its duration, so the dry run gives
// no count that reads as its transactions (it said 48 where the run did
// 19,476), and the plan's total counts only the cells it knows.
func TestDryRunSaysSustainedCountsAreUnknown(t *testing.T) {
	e, err := Parse("sus.yaml", []byte(`name: sus
where: lab
paths: [ipv4, ipv6]
runs: 3
cells:
  - {protocol: dns, conns: [1, 5]}
  - {protocol: dns, label: kept, conns: [2], runs: 4, duration: 2s}
`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WritePlan(&b, e, result.Lab, "", 0, Settling{})
	out := b.String()
	for _, want := range []string{"not known (16 user runs of 2s)", "\n36 transactions (and as many as the users of kept fit in their duration); estimated time about "} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "  16\n") {
		t.Errorf("the sustained cell's row reads as a count:\n%s", out)
	}
}

// TestDryRunOfSustainedCellsAlone (trial13): a plan of sustained cells
// alone says no "0 transactions": it says their count is not known.
func TestDryRunOfSustainedCellsAlone(t *testing.T) {
	e, err := Parse("sus.yaml", []byte(`name: sus
where: lab
paths: [ipv4]
runs: 2
cells:
  - {protocol: dns, label: kept, conns: [2], duration: 2s}
`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WritePlan(&b, e, result.Lab, "", 0, Settling{})
	if out := b.String(); strings.Contains(out, "0 transactions") || !strings.Contains(out, "\nas many transactions as the users of kept fit in their duration; estimated time about ") {
		t.Errorf("dry run:\n%s", out)
	}
}
