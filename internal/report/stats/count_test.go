package stats

import "testing"

func TestCountSaysOneInTheSingular(t *testing.T) {
	for n, want := range map[int]string{0: "0 sites", 1: "1 site", 2: "2 sites"} {
		if got := Count(n, "site"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCountOfAgreesWithTheWhole(t *testing.T) {
	for _, c := range []struct {
		k, n int
		want string
	}{{1, 1, "1 of 1 run"}, {0, 1, "0 of 1 run"}, {1, 3, "1 of 3 runs"}, {0, 0, "0 of 0 runs"}} {
		if got := CountOf(c.k, c.n, "run"); got != c.want {
			t.Errorf("CountOf(%d, %d) = %q, want %q", c.k, c.n, got, c.want)
		}
	}
}
