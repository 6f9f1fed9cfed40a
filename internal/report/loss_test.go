package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// lossyFile is build's result with a second cell group (dns, the same
// figures) beside http; links gives each run's loss records by group
// (nil: none), n the packets each entry says the run dropped.
func lossyFile(links func(group string, n int) map[string]string) *result.File {
	f := build(baseMS, otherMS)
	for _, r := range f.Runs {
		r.Protocol, r.Cell = "dns", result.CellKey("dns", r.Path, r.Conns)
		f.Runs = append(f.Runs, r)
	}
	for _, s := range f.Samples {
		s.Protocol, s.Cell = "dns", result.CellKey("dns", s.Path, s.Conns)
		f.Samples = append(f.Samples, s)
	}
	for i := range f.Runs {
		r := &f.Runs[i]
		r.Links = links(r.Protocol, r.Run)
	}
	return f
}

// resultDir writes f as a result directory, as `run` leaves one.
func resultDir(t *testing.T, f *result.File) string {
	t.Helper()
	dir := t.TempDir()
	fh, err := os.Create(filepath.Join(dir, SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	w := result.NewWriter(fh)
	w.Header(f.Header)
	for _, s := range f.Samples {
		w.Sample(s)
	}
	for _, r := range f.Runs {
		w.Run(r)
	}
	if err := errors.Join(w.Close(), fh.Close()); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	everyLink = "every link end's egress (the lab's loss)"
	onR1R2    = "r1-r2 egress, both ends"
	labR1R2   = "r1-r2 egress, both ends (the lab's loss)"
)

func dropped(cond string, n int) string {
	return fmt.Sprintf("%s (tc BPF): %d packets dropped in the run", cond, n)
}

// TestTwoLossesAreCountedApart (trial10 T13): a cell that ran at its own
// loss: between the routers and the lab's --loss on every link counts its
// runs, not its runs' loss records, and keeps each loss's drops apart:
// summary.json's loss.each, one report.txt row per loss with its place,
// results.csv's loss naming both (loss_dropped their sum).
func TestTwoLossesAreCountedApart(t *testing.T) {
	f := lossyFile(func(group string, run int) map[string]string {
		m := map[string]string{everyLink: dropped("loss 2%", 10)}
		if group == "http" {
			m[onR1R2] = dropped("loss 3%", 1)
		}
		return m
	})
	s := Summarize(f)
	for _, c := range s.Cells {
		want := &CellLoss{Condition: "loss 2%", Dropped: 100, Runs: 10, Each: []LossPart{{"loss 2%", "every link", 100}}}
		if c.Protocol == "http" {
			want = &CellLoss{Condition: "loss 2% on every link, loss 3% on r1-r2", Dropped: 110, Runs: 10,
				Each: []LossPart{{"loss 2%", "every link", 100}, {"loss 3%", "r1-r2", 10}}}
		}
		if !reflect.DeepEqual(c.Loss, want) {
			t.Errorf("%s/%s loss %+v, want %+v", c.Protocol, c.Path, c.Loss, want)
		}
	}
	var b bytes.Buffer
	Text(&b, s)
	for _, want := range []string{"dropped by loss 2% on every link    100 in 10 runs", "dropped by loss 3% on r1-r2    10 in 10 runs",
		"http over ipv6 (loss 2% on every link, loss 3% on r1-r2):", "dns over ipv6 (loss 2% on every link):"} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("report.txt lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "in 20 runs") {
		t.Errorf("report.txt counts loss records as runs:\n%s", b.String())
	}
	b.Reset()
	CSV(&b, s)
	for _, row := range csvRows(t, b.String()) {
		want := map[string]string{"http": "loss 2% on every link; loss 3% on r1-r2", "dns": "loss 2% on every link"}[row["protocol"]]
		if row["loss"] != want {
			t.Errorf("results.csv %s/%s loss %q, want %q", row["protocol"], row["path"], row["loss"], want)
		}
	}
}

// TestCompareSaysWhereTheLossWas (trial10 T1): compare's loss notes are
// per group unless every group both results have differs alike, and a
// loss is compared with its place: 3% on every link is not 3% on r1-r2.
func TestCompareSaysWhereTheLossWas(t *testing.T) {
	load := func(links func(group string, n int) map[string]string) *Summary {
		_, s, err := Load(resultDir(t, lossyFile(links)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	clean := load(func(string, int) map[string]string { return nil })
	cellLoss := load(func(group string, _ int) map[string]string { // lossc: http's loss: 3
		if group == "http" {
			return map[string]string{onR1R2: dropped("loss 3%", 4)}
		}
		return nil
	})
	wide := load(func(string, int) map[string]string { return map[string]string{everyLink: dropped("loss 3%", 9)} })
	topo := load(func(string, int) map[string]string { return map[string]string{labR1R2: dropped("loss 3%", 4)} })
	head := "A and B were measured under different conditions (below): their differences include these"
	for _, c := range []struct {
		name string
		a, b *Summary
		want []string
	}{
		{"one group at loss", clean, cellLoss, []string{head, "http: loss differs: A none; B loss 3% on r1-r2"}},
		{"every link against r1-r2", wide, cellLoss, []string{head,
			"dns: loss differs: A loss 3% on every link; B none",
			"http: loss differs: A loss 3% on every link; B loss 3% on r1-r2"}},
		{"every group alike", clean, wide, []string{head, "loss differs: A none; B loss 3% on every link"}},
		{"a topology's r1-r2 against every link", topo, wide, []string{head, "loss differs: A loss 3% on r1-r2; B loss 3% on every link"}},
		{"a topology's r1-r2 against a cell's", topo, cellLoss, []string{head, "dns: loss differs: A loss 3% on r1-r2; B none"}},
	} {
		if got := CompareSummaries("A", c.a, "B", c.b).Notes; strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: notes\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}
