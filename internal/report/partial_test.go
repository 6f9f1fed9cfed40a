package report

import (
	"bytes"
	"strings"
	"testing"
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
