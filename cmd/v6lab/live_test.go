package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// TestExportAndMergeWaitForAResultStillWritten: export and merge of a
// result whose samples file a running v6lab still writes (its lock held:
// here by this process, on another open file) exit 2, naming the writer
// and what to do, and write nothing: an export would be a cut that never
// learns of the runs to come (trial10b). Once the writer is gone, export
// writes the whole file.
func TestExportAndMergeWaitForAResultStillWritten(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, result.SamplesName)
	fh, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := result.Lock(fh); err != nil {
		t.Fatal(err)
	}
	w := result.NewCompressedWriter(fh)
	t0 := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	w.Header(result.Header{Kind: result.KindHeader, Tool: "v6lab", Name: "live", Created: t0, Target: "loopback", Baseline: "ipv4"})
	for i := range 3 {
		w.Sample(result.Sample{Kind: result.KindSample, Cell: result.CellKey("dns", "ipv4", 1), Protocol: "dns", Path: "ipv4", Conns: 1,
			User: i, Start: t0, TotalNS: 1e6})
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s is still being written by a running v6lab (pid %d): %%s it when that run ends", name, os.Getpid())
	for _, verb := range []string{"export", "merge"} {
		_, err := v6lab(t, verb, dir)
		if exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), fmt.Sprintf(want, verb)) {
			t.Errorf("%s of a result still written: exit %d, %v", verb, exitCode(err), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, result.ParquetName)); !os.IsNotExist(err) {
		t.Errorf("export of a result still written left %s: %v", result.ParquetName, err)
	}
	w.Close()
	fh.Close()
	if out, err := v6lab(t, "export", dir); err != nil || !strings.Contains(out, "wrote 3 samples") {
		t.Errorf("export after the writer: %v\n%s", err, out)
	}
}
