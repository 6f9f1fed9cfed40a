package lab

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestSitWithoutSitSuggestsBPF (trial 26): --tunnel sit on a kernel
// without sit fails saying the bpf tunnel does the same; the lab it began
// is removed.
func TestSitWithoutSitSuggestsBPF(t *testing.T) {
	requireRoot(t)
	l, err := Up(context.Background(), Config{Name: testName(t), Tunnel: "sit"})
	if err == nil {
		l.Close()
		t.Skip("this kernel has sit: nothing to suggest")
	}
	if !errors.Is(err, ErrNoSit) || !strings.Contains(err.Error(), "--tunnel bpf") {
		t.Errorf("--tunnel sit: %v", err)
	}
	if len(exactNamespaces(testName(t))) > 0 {
		t.Errorf("the lab is left up after failing")
	}
}
