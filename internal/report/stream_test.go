package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
		"interrupted": interrupted, "unrecorded": unrecorded, "merged": merged, "transport": transportFile()}
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
