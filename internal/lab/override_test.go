package lab

import "testing"

// TestRateZeroUnshapesATopology: --rate 0 leaves every link unshaped,
// whatever rates the topology gave (the main job's 1 Gbit/s links), and
// --rate 100M shapes every one of them.
func TestRateZeroUnshapesATopology(t *testing.T) {
	for _, tc := range []struct {
		rate string
		want uint64
	}{{"0", 0}, {"100M", 100_000_000}} {
		c, err := ParseTopology("quick.yaml", []byte("links:\n  all:\n    rate: 1G\n  r1-r2:\n    rate: 10M\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Links) == 0 {
			t.Fatalf("the topology has no links: %+v", c)
		}
		rate, name := tc.rate, "q1"
		if err := c.Override(Overrides{Name: &name, Rate: &rate}); err != nil {
			t.Fatalf("--rate %s: %v", tc.rate, err)
		}
		if c.Shaping.Rate != tc.want {
			t.Errorf("--rate %s: the lab's rate is %d, want %d", tc.rate, c.Shaping.Rate, tc.want)
		}
		for name, l := range c.Links {
			if l.Shaping.Rate != tc.want {
				t.Errorf("--rate %s: link %s at %d, want %d", tc.rate, name, l.Shaping.Rate, tc.want)
			}
		}
	}
}
