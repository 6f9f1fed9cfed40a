package report

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// writeInOrder writes f as v6lab's writer does: each run's samples, then
// its record; samples of runs without a record (cut off) last. compressed
// picks the file's form.
func writeInOrder(t *testing.T, dir string, f *result.File, compressed bool) {
	t.Helper()
	name := filepath.Join(dir, result.PlainSamplesName)
	newWriter := result.NewWriter
	if compressed {
		name, newWriter = filepath.Join(dir, result.SamplesName), result.NewCompressedWriter
	}
	fh, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(fh)
	w.Header(f.Header)
	key := func(p, path string, conns, run int) string { return fmt.Sprint(p, path, conns, run) }
	recorded := map[string]bool{}
	for _, r := range f.Runs {
		recorded[key(r.Protocol, r.Path, r.Conns, r.Run)] = true
	}
	for _, r := range f.Runs {
		for _, s := range f.Samples {
			if key(s.Protocol, s.Path, s.Conns, s.Run) == key(r.Protocol, r.Path, r.Conns, r.Run) {
				w.Sample(s)
			}
		}
		w.Run(r)
		w.Sync()
	}
	for _, s := range f.Samples {
		if !recorded[key(s.Protocol, s.Path, s.Conns, s.Run)] {
			w.Sample(s)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
}

// TestStreamingSummaryIsTheInMemoryOne: a summary computed as the file
// streams by (each run's samples before its record, so a run's figures
// wait for its record) is byte for byte the one of the whole file in
// memory, on every kind of result the reports' tests build: plain and
// compressed, with interrupted, left-out and unrecorded runs, transport
// intervals, background traffic and a merge's segments.
func TestStreamingSummaryIsTheInMemoryOne(t *testing.T) {
	interrupted := build(baseMS, otherMS)
	interrupted.Runs[len(interrupted.Runs)-1].Err = "interrupted"
	interrupted.Runs[3].Err = "wire: 3 packets over ipv4"
	unrecorded := build(baseMS, otherMS)
	unrecorded.Runs = unrecorded.Runs[:len(unrecorded.Runs)-3]
	merged := build(baseMS, otherMS)
	merged.Header.Merged = []result.Segment{{Index: 0, Count: 2, Host: "a"}, {Index: 1, Count: 2, Host: "b", LateRuns: 1, MaxLateNS: 7e6}}
	merged.Runs[5].LateNS = 7e6
	cases := map[string]*result.File{"golden": build(baseMS, otherMS), "multi": buildMulti(), "towson": towson(),
		"interrupted": interrupted, "unrecorded": unrecorded, "merged": merged, "transport": transportFile(), "many": manySamples(2)}
	for name, f := range cases {
		var want bytes.Buffer
		JSON(&want, Summarize(f))
		for _, compressed := range []bool{false, true} {
			dir := t.TempDir()
			writeInOrder(t, dir, f, compressed)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			JSON(&got, s)
			if got.String() != want.String() {
				t.Errorf("%s (compressed %v): streamed summary differs from the in-memory one:\n%s\nwant\n%s", name, compressed, got.String(), want.String())
			}
		}
	}
}

// transportFile is two paths' TCP trials with intervals.
func transportFile() *result.File {
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: 1, Name: "tr", Created: t0, Target: "lab", Baseline: "ipv4"}}
	for run := range 3 {
		for i, p := range []string{"ipv4", "ipv6"} {
			cell := result.CellKey("tcp", p, 1)
			mbps := 90.0 - float64(i)*10 + float64(run)/3
			var ivs []result.Interval
			for k := range 4 {
				ivs = append(ivs, result.Interval{StartNS: int64(k) * 1e9, EndNS: int64(k+1)*1e9 + int64(run), Bytes: int64(mbps*1e6/8) + int64(k)})
			}
			f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "tcp", Path: p, Conns: 1,
				Run: run, Start: t0, TotalNS: 4e9, Intervals: ivs, WireNS: 3e9 + int64(run)*7,
				Metrics: map[string]float64{"throughput_mbps": mbps, "retransmits": float64(run), "tcp_efficiency_pct": 100 - 0.1*float64(run)}})
			f.Runs = append(f.Runs, result.Run{Kind: result.KindRun, Cell: cell, Protocol: "tcp", Path: p, Conns: 1, Run: run,
				Start: t0, End: t0.Add(4 * time.Second), Completed: 1})
		}
	}
	return f
}

// manySamples is a result of runs of hundreds of samples: response times
// spread over four decades, a few failures of two kinds, wire times,
// client turns, a metric on some samples, and connection facts (TLS,
// kept, resumed).
func manySamples(seed uint64) *result.File {
	r := rand.New(rand.NewPCG(seed, 3))
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: result.FormatVersion, Name: "many", Created: t0,
		Target: "loopback", Baseline: "ipv4", Spec: map[string]any{"name": "many", "cells": []any{map[string]any{"protocol": "http",
			"paths": []any{"ipv4", "ipv6"}, "conns": []any{2, 50}, "runs": 6, "warmup": 1}}}}}
	for run := range 6 {
		for _, p := range []string{"ipv4", "ipv6"} {
			for _, conns := range []int{2, 50} {
				cell := result.CellKey("http", p, conns)
				n, failed := 150+r.IntN(300), 0
				for u := range n {
					s := result.Sample{Cell: cell, Protocol: "http", Path: p, Conns: conns, Run: run, Warmup: run == 0, User: u % conns,
						Start: t0, TotalNS: int64(math.Exp(r.Float64()*9.2) * 1e3), WireNS: int64(r.IntN(5e6)), ClientTurnNS: int64(r.IntN(3e5)),
						TLS: "TLS 1.3", Kept: u%3 == 1, Resumed: u%5 == 0}
					switch {
					case r.IntN(40) == 0:
						s.Err, s.ErrKind, failed = fmt.Sprintf("timeout %d", u), "timeout", failed+1
					case r.IntN(60) == 0:
						s.Err, failed = "reset by peer", failed+1
					case r.IntN(3) == 0:
						s.Metrics = map[string]float64{"ipv6_won": float64(r.IntN(2)), "he_attempts": 1 + r.Float64()}
						if r.IntN(4) > 0 { // the families' fates: the timer what-if's sums
							result.PutFate(s.Metrics, true, result.Fate{State: result.FateDone, Time: time.Duration(r.IntN(4e8))})
							result.PutFate(s.Metrics, false, result.Fate{State: result.FateSilent, Time: time.Duration(r.IntN(4e8))})
						}
					}
					f.Samples = append(f.Samples, s)
				}
				f.Runs = append(f.Runs, result.Run{Cell: cell, Protocol: "http", Path: p, Conns: conns, Run: run, Warmup: run == 0,
					Start: t0.Add(time.Duration(run) * time.Second), End: t0.Add(time.Duration(run)*time.Second + time.Duration(r.IntN(1e9))),
					Completed: n - failed, Failed: failed})
			}
		}
	}
	return f
}

// TestKeepingOneRowOfEveryNChangesNoFigure: a samples file written with
// sample_every 7 (one row of every 7 per run, every run's totals in its
// record) gives the summary of the file with every row, figure for
// figure, percentiles included; it holds a seventh of the rows.
func TestKeepingOneRowOfEveryNChangesNoFigure(t *testing.T) {
	f := manySamples(1)
	var want bytes.Buffer
	JSON(&want, Summarize(f))
	dir := t.TempDir()
	fh, err := os.Create(filepath.Join(dir, result.SamplesName))
	if err != nil {
		t.Fatal(err)
	}
	w := result.NewCompressedWriter(fh)
	w.KeepEvery(7, NewTotaler)
	h := f.Header
	h.SampleEvery = 7
	w.Header(h)
	i := 0
	for _, r := range f.Runs {
		for ; i < len(f.Samples) && f.Samples[i].Cell == r.Cell && f.Samples[i].Run == r.Run; i++ {
			w.Sample(f.Samples[i])
		}
		w.Run(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	kept, s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rows := len(kept.Samples); rows > len(f.Samples)/7+len(f.Runs) || rows < len(f.Samples)/7 {
		t.Errorf("%d rows kept of %d samples", rows, len(f.Samples))
	}
	if kept.Runs[3].Totals == nil || kept.Runs[3].Totals.Completed != f.Runs[3].Completed || kept.Header.SampleEvery != 7 {
		t.Fatalf("run record %+v", kept.Runs[3])
	}
	if s.SampleEvery != 7 {
		t.Errorf("summary's sample_every %d", s.SampleEvery)
	}
	s.SampleEvery = 0
	var got bytes.Buffer
	JSON(&got, s)
	if got.String() != want.String() {
		t.Errorf("the sampled file's summary differs:\n%s\nwant\n%s", got.String(), want.String())
	}
	var text bytes.Buffer
	s.SampleEvery = 7
	Text(&text, s)
	if !strings.Contains(text.String(), "sampled: the samples file keeps one row of every 7 samples of each run") {
		t.Errorf("report.txt does not say it was sampled")
	}
}

// TestAShareIsBoundedAt100: efficiency of 100, 99.9 and 99.8% over three
// trials: Student's interval reaches above 100%, which a share cannot;
// it is bounded there as a count is at 0, its lower end untouched.
func TestAShareIsBoundedAt100(t *testing.T) {
	s := Summarize(transportFile())
	m := s.Cells[0].Metrics["tcp_efficiency_pct"]
	if m == nil || m.CI95 == nil {
		t.Fatalf("no efficiency interval: %+v", s.Cells[0].Metrics)
	}
	if m.CI95[1] != 100 || m.CI95[0] >= 99.8 || m.CI95[0] <= 99 {
		t.Errorf("efficiency %.3f (%.3f–%.3f), want its upper end at 100", m.Mean, m.CI95[0], m.CI95[1])
	}
}
