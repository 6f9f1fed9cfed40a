package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// httpSpec is the header's spec of build's experiment: one http group,
// two paths, one connection count, 11 runs: 22 runs planned.
var httpSpec = map[string]any{"name": "golden", "cells": []any{map[string]any{"protocol": "http", "paths": []any{"ipv4", "ipv6"},
	"conns": []any{2}, "runs": 11, "warmup": 1}}}

// TestAPartialRunSaysSo: a result that holds fewer finished runs than its
// plan (Ctrl-C, kill -9) says how many of how many, and how to resume, in
// report.txt, report.html and summary.json (issue 40 item 5); a complete
// one says nothing of it.
func TestAPartialRunSaysSo(t *testing.T) {
	f := build(baseMS, otherMS)
	f.Header.Spec = httpSpec
	if s := Summarize(f); s.Partial != nil {
		t.Fatalf("a complete result: partial %+v", s.Partial)
	}
	f.Runs = f.Runs[:20]           // killed: two runs never recorded,
	f.Runs[19].Err = "interrupted" // and the one Ctrl-C stopped
	f.Samples = f.Samples[:len(f.Samples)-5]
	s := Summarize(f)
	if p := s.Partial; p == nil || p.RunsDone != 19 || p.RunsPlanned != 22 || p.Resume != "v6lab run --resume DIR" {
		t.Fatalf("partial %+v", s.Partial)
	}
	want := "partial: 19 of 22 runs; resume with `v6lab run --resume DIR`"
	var text, page, js bytes.Buffer
	Text(&text, s)
	HTML(&page, s)
	JSON(&js, s)
	if first := strings.SplitN(text.String(), "\n", 3); !strings.Contains(first[1], want) {
		t.Errorf("report.txt's second line is not %q:\n%s", want, text.String())
	}
	if !strings.Contains(page.String(), "<strong>partial: 19 of 22 runs; resume with `v6lab run --resume DIR`</strong>") {
		t.Errorf("report.html does not say it is partial")
	}
	if !strings.Contains(page.String(), ", partial</summary>") {
		t.Errorf("report.html's collapsed heading does not say partial")
	}
	if !strings.Contains(js.String(), `"partial": {
    "runs_done": 19,
    "runs_planned": 22,
    "resume": "v6lab run --resume DIR"
  }`) {
		t.Errorf("summary.json:\n%s", js.String())
	}
	// From a directory, the command names it.
	dir := t.TempDir()
	writeInOrder(t, dir, f, true)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Partial == nil || s.Partial.Resume != "v6lab run --resume "+dir {
		t.Errorf("partial from %s: %+v", dir, s.Partial)
	}
}

// TestAnInterruptedPathIsNotAFailingOne: a path whose only counted run was
// interrupted says so ("no counted run: interrupted"), not that no run
// completed a transaction; with no comparison left, the too-few-runs note
// names no "Holm's correction over 0 comparisons" (trial6 F6).
func TestAnInterruptedPathIsNotAFailingOne(t *testing.T) {
	f := build([]float64{10}, []float64{12})
	for i := range f.Runs {
		if f.Runs[i].Path == "ipv6" && !f.Runs[i].Warmup {
			f.Runs[i].Err = "interrupted"
		}
	}
	s := Summarize(f)
	var six *Cell
	for i := range s.Cells {
		if s.Cells[i].Path == "ipv6" {
			six = &s.Cells[i]
		}
	}
	if six == nil || six.MeanMS != nil || six.NA["mean_ms"] != "no counted run: interrupted" {
		t.Fatalf("ipv6 cell %+v", six)
	}
	var text bytes.Buffer
	Text(&text, s)
	if !strings.Contains(text.String(), "n/a (no counted run: interrupted)") || strings.Contains(text.String(), "no run completed a transaction") {
		t.Errorf("report.txt:\n%s", text.String())
	}
	if strings.Contains(text.String(), "over 0 comparisons") {
		t.Errorf("Holm's correction over 0 comparisons:\n%s", text.String())
	}
}

// TestAResultStillWrittenSaysSo: a result whose samples file a running
// v6lab still writes (its lock held, as the writer holds it) is reported
// as figures so far, naming the writer's pid, with no resume advice and
// no word of a kill or an interruption; once the writer is gone, the
// same file reads as a stopped run's (trial10 T12).
func TestAResultStillWrittenSaysSo(t *testing.T) {
	f := build(baseMS, otherMS)
	f.Header.Spec = httpSpec
	f.Runs = f.Runs[:20] // runs 21 and 22 have samples, no record yet
	dir := t.TempDir()
	writeInOrder(t, dir, f, true)
	held, err := os.OpenFile(filepath.Join(dir, result.SamplesName), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := result.Lock(held); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Partial
	if p == nil || !p.Writing || p.WriterPID != os.Getpid() || p.Resume != "" || p.RunsDone != 20 || p.RunsPlanned != 22 {
		t.Fatalf("partial %+v, want writing by pid %d, 20 of 22, no resume", p, os.Getpid())
	}
	var text, js, page bytes.Buffer
	Text(&text, s)
	JSON(&js, s)
	HTML(&page, s)
	want := fmt.Sprintf("still being written by a running v6lab (pid %d): figures so far, 20 of 22 runs", os.Getpid())
	if first := strings.SplitN(text.String(), "\n", 3); !strings.Contains(first[1], want) {
		t.Errorf("report.txt's second line is not %q:\n%s", want, text.String())
	}
	// report.html's collapsed heading says it as report.txt does, not
	// "partial" (trial10b).
	if !strings.Contains(page.String(), ", still being written</summary>") || strings.Contains(page.String(), "partial") ||
		!strings.Contains(page.String(), "<strong>"+want+"</strong>") {
		t.Errorf("report.html of a result still written:\n%s", page.String())
	}
	for _, bad := range []string{"resume", "killed", "interrupted", "cut-off"} {
		if strings.Contains(text.String(), bad) || strings.Contains(js.String(), bad) {
			t.Errorf("a result still written says %q:\n%s", bad, text.String())
		}
	}
	if !strings.Contains(text.String(), "not counted yet: still running") || s.LeftOutRuns != 0 {
		t.Errorf("the running runs are not said to be running (left out %d):\n%s", s.LeftOutRuns, text.String())
	}
	if !strings.Contains(js.String(), `"writing": true`) || !strings.Contains(js.String(), fmt.Sprintf(`"writer_pid": %d`, os.Getpid())) {
		t.Errorf("summary.json does not say who writes it:\n%s", js.String())
	}
	whole := Summarize(build(baseMS, otherMS))
	v := CompareSummaries("a", whole, "b", s)
	if want := "B is " + p.Line(); !slices.Contains(v.Notes, want) || len(CompareSummaries("a", whole, "c", whole).Notes) != 0 {
		t.Errorf("compare's notes %q, want %q", v.Notes, want)
	}
	// results.csv's rows say it too, every one (trial11 LOW 9).
	var csv bytes.Buffer
	CSV(&csv, s)
	rows := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if !strings.HasSuffix(rows[0], ",partial") {
		t.Errorf("results.csv header %q", rows[0])
	}
	for _, r := range rows[1:] {
		if !strings.HasSuffix(r, ",still being written: 20 of 22 runs") {
			t.Errorf("results.csv row of a result still written: %q", r)
		}
	}
	// A cell the live side has not run yet is not "only" in the other.
	early := *s
	early.Cells = slices.DeleteFunc(slices.Clone(s.Cells), func(c Cell) bool { return c.Path == "ipv6" })
	v = CompareSummaries("a", whole, "b", &early)
	var out bytes.Buffer
	VersusText(&out, v)
	if len(v.OnlyA) != 0 || !strings.Contains(out.String(), "not in B yet (still being written): http/ipv6/2") || strings.Contains(out.String(), "only in A") {
		t.Errorf("a cell B has not run yet:\n%s", out.String())
	}
	if v = CompareSummaries("b", &early, "a", whole); len(v.OnlyB) != 0 || len(v.NotInAYet) != 1 {
		t.Errorf("a cell A has not run yet: only in B %q, not in A yet %q", v.OnlyB, v.NotInAYet)
	}
	held.Close() // the writer is gone: the same file is a stopped run's
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if p := s.Partial; p == nil || p.Writing || p.Resume != "v6lab run --resume "+dir {
		t.Errorf("after the writer: partial %+v", p)
	}
	if v := CompareSummaries("a", s, "b", whole); !slices.Contains(v.Notes, "A is partial: 20 of 22 runs; resume with `v6lab run --resume "+dir+"`") {
		t.Errorf("compare's notes of a partial A: %q", v.Notes)
	}
	csv.Reset()
	CSV(&csv, s)
	if rows := strings.Split(strings.TrimSpace(csv.String()), "\n"); !strings.HasSuffix(rows[1], ",partial: 20 of 22 runs") {
		t.Errorf("results.csv row of a partial result: %q", rows[1])
	}
	early.Partial = s.Partial
	if v := CompareSummaries("a", whole, "b", &early); !slices.Equal(v.OnlyA, []string{"http/ipv6/2"}) {
		t.Errorf("a cell a stopped B lacks: only in A %q", v.OnlyA)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "left out: interrupted") {
		t.Errorf("after the writer, the unrecorded runs are not interrupted: %q", s.Notes)
	}
}

// TestAPathWithOnlyItsWarmupHasNoCountedRunYet: in a partial result, a
// path whose only run was its warm-up (whose transactions completed) has
// no counted run yet; it is not a path on which no run completed a
// transaction (trial10b). A counted run that completed nothing still says
// that.
func TestAPathWithOnlyItsWarmupHasNoCountedRunYet(t *testing.T) {
	f := build(baseMS, otherMS)
	f.Header.Spec = httpSpec
	f.Runs = f.Runs[:3] // both warm-ups and ipv4's first counted run
	f.Samples = slices.DeleteFunc(f.Samples, func(s result.Sample) bool { return s.Run > 1 || s.Run == 1 && s.Path == "ipv6" })
	s := Summarize(f)
	var text bytes.Buffer
	Text(&text, s)
	if s.Partial == nil || !strings.Contains(text.String(), "n/a (no counted run yet: the result is partial)") ||
		strings.Contains(text.String(), "no run completed a transaction") ||
		!strings.Contains(text.String(), "ipv6: not comparable at 2 connections (ipv6 has no counted run yet: the result is partial)") {
		t.Errorf("partial %+v, report.txt:\n%s", s.Partial, text.String())
	}
	// Every n/a of its comparison gives that one reason, the difference's
	// too (trial12: "a path has no run means" beside it).
	for _, c := range s.Comparisons {
		for f, why := range c.NA {
			if c.Path == "ipv6" && why != "ipv6 has no counted run yet: the result is partial" {
				t.Errorf("ipv6's %s: n/a (%s)", f, why)
			}
		}
	}
	// The same path's counted run recorded, every transaction failed.
	f.Runs = append(f.Runs, result.Run{Kind: result.KindRun, Cell: result.CellKey("http", "ipv6", 2), Protocol: "http", Path: "ipv6", Conns: 2, Run: 1,
		Start: t0, End: t0.Add(time.Second), Failed: 1})
	f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: result.CellKey("http", "ipv6", 2), Protocol: "http", Path: "ipv6", Conns: 2,
		Run: 1, Start: t0, TotalNS: 30e9, Err: "io: timed out after 30s", ErrKind: "timeout"})
	for _, c := range Summarize(f).Cells {
		if c.Path == "ipv6" && c.NA["mean_ms"] != "no run completed a transaction" {
			t.Errorf("ipv6 after a counted run that failed: mean n/a %q", c.NA["mean_ms"])
		}
	}
}
