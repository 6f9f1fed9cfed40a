package sitelab

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/lab"
)

// TestCheckLabRefusesAnOrphan (trial4 F8): survey --lab ran against a lab
// whose keeper (its sites' web and DNS servers) had been killed, and
// judged every site by lookups nobody answered.
func TestCheckLabRefusesAnOrphan(t *testing.T) {
	old := lab.StateDir
	lab.StateDir = t.TempDir()
	t.Cleanup(func() { lab.StateDir = old })
	// A pid beyond pid_max stands for the dead owner.
	b, _ := json.Marshal(map[string]any{"name": "orph", "pid": 1 << 30, "start": 1, "kept": true, "namespaces": []string{}})
	if err := os.WriteFile(filepath.Join(lab.StateDir, "orph.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	err := CheckLab("orph")
	if err == nil || !strings.Contains(err.Error(), `lab "orph" is an orphan`) || !strings.Contains(err.Error(), "lab down --name orph") {
		t.Errorf("an orphan: %v", err)
	}
}
