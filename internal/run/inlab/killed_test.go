package inlab

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"v6lab/internal/report"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/host"
)

// TestAKilledChildIsReported (trial10 T5): when a signal kills the
// measuring process, its parent says so, naming the signal, writes the
// reports of what it kept and gives the partial line with the resume
// command, as Ctrl-C does; a directory made for a child that wrote
// nothing is removed. Neither is a ChildExitError (whose code would be
// passed on: -1 became status 255).
func TestAKilledChildIsReported(t *testing.T) {
	root := t.TempDir()
	var out bytes.Buffer
	r := &Session{Exp: &experiment.Experiment{Name: "k"}, Results: root, Out: &out, Err: &out}
	killed := &host.KilledError{PID: 4242, Signal: syscall.SIGKILL}
	job := &Job{}
	dir, err := r.resultDir(job)
	if err != nil || job.Made != dir {
		t.Fatalf("result directory %q (job's %q): %v", dir, job.Made, err)
	}
	err = r.afterChild(job, dir, killed)
	var ce *ChildKilledError
	var exit *ChildExitError
	if !errors.As(err, &ce) || errors.As(err, &exit) || !strings.Contains(err.Error(), "the measuring process (v6lab run --lab-child, pid 4242) was killed by signal 9 (SIGKILL) before it wrote a sample") {
		t.Fatalf("killed before measuring: %v", err)
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Errorf("the empty result directory %s is left", dir)
	}
	// Killed in its third run of four: two recorded, the third's samples
	// without a record.
	job = &Job{}
	if dir, err = r.resultDir(job); err != nil {
		t.Fatal(err)
	}
	writeRuns(t, dir, 2)
	err = r.afterChild(job, dir, killed)
	want := "was killed by signal 9 (SIGKILL); every finished run is kept in " + dir + ": partial: 2 of 4 runs; resume with `v6lab run --resume " + dir + "`"
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
		t.Fatalf("killed in its third run: %v, want %q", err, want)
	}
	if !strings.Contains(out.String(), "results: "+dir+" (samples.jsonl.zst, summary.json") || !strings.Contains(out.String(), "partial: 2 of 4 runs") {
		t.Errorf("printed:\n%s", out.String())
	}
	for _, f := range []string{report.SummaryFile, report.TextFile, report.CSVFile, report.HTMLFile} {
		if _, err := os.Stat(dir + "/" + f); err != nil {
			t.Errorf("no %s written: %v", f, err)
		}
	}
}

// writeRuns writes a samples file of one http cell over ipv4, four runs
// planned (no warm-up), done recorded, and the next one's samples cut off.
func writeRuns(t *testing.T, dir string, done int) {
	t.Helper()
	f, w, err := result.CreateSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	w.Header(result.Header{Kind: result.KindHeader, FormatVersion: result.FormatVersion, Name: "k", Created: t0, Target: "lab", Baseline: "ipv4",
		Spec: map[string]any{"name": "k", "cells": []any{map[string]any{"protocol": "http", "paths": []any{"ipv4"}, "conns": []any{1}, "runs": 4, "warmup": 0}}}})
	cell := result.CellKey("http", "ipv4", 1)
	for run := 0; run <= done; run++ {
		start := t0.Add(time.Duration(run) * time.Second)
		for i := range 3 {
			w.Sample(result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "http", Path: "ipv4", Conns: 1, Run: run, Start: start, TotalNS: int64(i+1) * 1e6})
		}
		if run < done {
			w.Run(result.Run{Kind: result.KindRun, Cell: cell, Protocol: "http", Path: "ipv4", Conns: 1, Run: run, Start: start, End: start.Add(time.Second), Completed: 3})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
