package stats

import "testing"

func TestCountSaysOneInTheSingular(t *testing.T) {
	for n, want := range map[int]string{0: "0 sites", 1: "1 site", 2: "2 sites"} {
		if got := Count(n, "site"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
