package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestEveryEarlierFormatRendersUnchanged: result directories written by
// v6lab at format versions 1, 2 and 3 (testdata/formats: a loopback run of
// each version's own binary, plain samples.jsonl) render as the code of
// 2026-11-26 rendered them before the summary streamed (golden.*, made by
// that binary's v6lab report), in every format. -update rewrites them
// (only when a change of a report is meant).
func TestEveryEarlierFormatRendersUnchanged(t *testing.T) {
	for v := 1; v <= 3; v++ {
		dir := filepath.Join("testdata", "formats", fmt.Sprintf("v%d", v))
		t.Run(filepath.Base(dir), func(t *testing.T) {
			head, err := os.ReadFile(filepath.Join(dir, "samples.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`{"kind":"header","format_version":%d,`, v); !bytes.HasPrefix(head, []byte(want)) {
				t.Fatalf("%s is not a version %d file", dir, v)
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []struct {
				ext    string
				render func(io.Writer, *Summary) error
			}{{"text", Text}, {"json", JSON}, {"csv", CSV}, {"html", HTML}} {
				var got bytes.Buffer
				if err := r.render(&got, s); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("formats", filepath.Base(dir), "golden."+r.ext), got.Bytes())
			}
		})
	}
}
