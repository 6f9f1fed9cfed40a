package run

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/run/experiment"
)

// TestDryRunsBoundCountsSettlingAtALabLoss (trial11 L12): at a lab loss
// settling gives each path of each group its tries, each of at least
// settling's floor (a path that does not settle is left to its runs), so
// the dry run's "at most" bound holds them: 3 tries of 5s (a group whose
// timeout is under the floor) and of 10s (one whose timeout is 10s) on
// each of two paths, 90s over the same plan in a lab without loss, where
// a path that does not settle ends the run and the bound says no tries.
func TestDryRunsBoundCountsSettlingAtALabLoss(t *testing.T) {
	exp, err := experiment.Parse("l.yaml", []byte(`name: l
where: lab
paths: [ipv4, ipv6]
runs: 3
timeout: 3s
cells:
  - {protocol: http, conns: [1, 4]}
  - {protocol: http, label: long, conns: [1], timeout: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(cfg lab.Config) (string, time.Duration) {
		var b strings.Builder
		WritePlan(&b, exp, Lab, "", Settings{Lab: cfg})
		m := regexp.MustCompile(`\(at most (\S+) if (.*)\)\n`).FindStringSubmatch(b.String())
		if m == nil {
			t.Fatalf("no bound:\n%s", b.String())
		}
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		return m[2], d
	}
	clean, cleanMost := plan(lab.Config{})
	if clean != "every run waits out its timeout" {
		t.Errorf("a lab without loss: %q", clean)
	}
	lossy, lossyMost := plan(lab.Config{Shaping: lab.Shaping{Loss: 20}})
	if want := "every run waits out its timeout and settling gives each path 3 tries of 5s or 10s at the lab's loss 20% on every link"; lossy != want {
		t.Errorf("at a lab loss:\n got %q\nwant %q", lossy, want)
	}
	if d := lossyMost - cleanMost; d != 2*3*(5+10)*time.Second {
		t.Errorf("settling adds %v to the bound (%v, %v), want 1m30s", d, cleanMost, lossyMost)
	}
}
