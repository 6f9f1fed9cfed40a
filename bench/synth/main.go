// Command synth writes synthetic v6lab results at any scale, for
// bench/results-at-scale: a result directory of N samples (or the N
// segments of a split run of them), plain or compressed, and measures
// what the samples' writer costs at a steady rate.
//
//	synth -dir DIR -samples 10000000 [-segments 4] [-plain] [-seed 1]
//	synth -writer-cpu -rate 100000 -seconds 10
//
// The experiment is two cell groups (http with wire times and client
// turns, dns) over ipv4, ipv6 and 6in4 at 1, 10, 100 and 1000 users, 11
// runs each, the first a warm-up: 264 runs whose users each make
// samples/264/users transactions, response times log-normal around 1-9
// ms, one in 500 failed. A split run's segment i gets the users
// floor(i*c/N).. of every run, as run --segment does.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"v6lab/internal/result"
)

func main() {
	dir := flag.String("dir", "", "result directory to write (segments: DIR-seg0 … )")
	samples := flag.Int("samples", 1_000_000, "about how many samples")
	segments := flag.Int("segments", 0, "write the segments of a split run of this many (0: one result)")
	plain := flag.Bool("plain", false, "write samples.jsonl (as v6lab before format 6) instead of samples.jsonl.zst")
	seed := flag.Uint64("seed", 1, "random seed")
	cpu := flag.Bool("writer-cpu", false, "measure the writer's CPU at -rate samples/s for -seconds, plain and compressed")
	rate := flag.Int("rate", 100_000, "samples per second (-writer-cpu)")
	secs := flag.Int("seconds", 10, "seconds (-writer-cpu)")
	flag.Parse()
	if *cpu {
		for _, compressed := range []bool{false, true} {
			if err := writerCPU(compressed, *rate, *secs); err != nil {
				fatal(err)
			}
		}
		return
	}
	if *dir == "" {
		fatal(fmt.Errorf("-dir is required"))
	}
	n, err := write(*dir, *samples, *segments, *plain, *seed)
	if err != nil {
		fatal(err)
	}
	fmt.Printf("synth: wrote %d samples to %s (%d segments)\n", n, *dir, *segments)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "synth:", err)
	os.Exit(1)
}

var (
	groups = []string{"http", "dns"}
	paths  = []string{"ipv4", "ipv6", "6in4"}
	conns  = []int{1, 10, 100, 1000}
)

const runs = 11

func spec() map[string]any {
	var cells []any
	for _, g := range groups {
		cells = append(cells, map[string]any{"protocol": g, "paths": paths, "conns": conns, "runs": runs, "warmup": 1,
			"timeout": "30s", "pause": "0s", "params": map[string]string{"engine": "evloop"}})
	}
	return map[string]any{"name": "synth", "where": "hosts", "servers": "embedded", "baseline": "ipv4", "order": "interleaved", "cells": cells}
}

// out is one result directory being written.
type out struct {
	f   *os.File
	w   *result.Writer
	seg *result.Segment
}

func create(dir string, plain bool, h result.Header) (*out, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name, newWriter := result.SamplesName, result.NewCompressedWriter
	if plain {
		name, newWriter = result.PlainSamplesName, result.NewWriter
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	o := &out{f: f, w: newWriter(f), seg: h.Segment}
	o.w.Header(h)
	return o, nil
}

func write(dir string, samples, segments int, plain bool, seed uint64) (int, error) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	h := result.Header{FormatVersion: result.FormatVersion, Tool: "v6lab", ToolVersion: "synth", Name: "synth", Created: t0,
		Host: "synth", Kernel: "synthetic", CPUs: 2, Target: "remote", Baseline: "ipv4", Spec: spec(),
		Notes: []string{"synthetic samples (bench/synth)"}}
	if plain {
		h.FormatVersion = 5
	}
	var outs []*out
	if segments == 0 {
		o, err := create(dir, plain, h)
		if err != nil {
			return 0, err
		}
		outs = append(outs, o)
	}
	for i := range segments {
		hs := h
		hs.Segment = &result.Segment{Index: i, Count: segments, Host: "synth-" + strconv.Itoa(i), Clock: "synthetic"}
		o, err := create(fmt.Sprintf("%s-seg%d", dir, i), plain, hs)
		if err != nil {
			return 0, err
		}
		outs = append(outs, o)
	}
	r := rand.New(rand.NewPCG(seed, 43))
	perRun := max(1, samples/(len(groups)*len(paths)*len(conns)*runs))
	written, seq := 0, 0
	clock := t0
	for gi, g := range groups {
		for _, c := range conns {
			for run := range runs {
				for pi, p := range paths {
					written += writeRun(outs, r, g, p, c, run, seq, perRun, gi, pi, &clock)
					seq++
				}
			}
		}
	}
	for _, o := range outs {
		if err := o.w.Close(); err != nil {
			return written, err
		}
		if err := o.f.Close(); err != nil {
			return written, err
		}
	}
	return written, nil
}

// writeRun writes one run's samples, each to the segment that ran its
// user, then each segment's record of it.
func writeRun(outs []*out, r *rand.Rand, g, p string, c, run, seq, perRun, gi, pi int, clock *time.Time) int {
	cell := result.CellKey(g, p, c)
	each := max(1, perRun/c)
	start := *clock
	done := make([][2]int, len(outs))
	n := 0
	for k := range each {
		for u := range c {
			seg := 0
			if outs[0].seg != nil {
				seg = result.SegmentOf(u, c, len(outs))
			}
			s := sample(r, g, p, cell, c, run, u, gi, pi, start.Add(time.Duration(k)*time.Millisecond))
			outs[seg].w.Sample(s)
			if s.OK() {
				done[seg][0]++
			} else {
				done[seg][1]++
			}
			n++
		}
	}
	end := start.Add(time.Duration(each)*time.Millisecond + 5*time.Millisecond)
	for i, o := range outs {
		rec := result.Run{Cell: cell, Protocol: g, Path: p, Conns: c, Run: run, Warmup: run == 0, Seq: seq,
			Start: start, End: end, Completed: done[i][0], Failed: done[i][1]}
		o.w.Run(rec)
		o.w.Sync()
	}
	*clock = end.Add(time.Millisecond)
	return n
}

func sample(r *rand.Rand, g, p, cell string, c, run, u, gi, pi int, start time.Time) result.Sample {
	ms := math.Exp(r.NormFloat64()*0.5+float64(gi+pi)*0.3) * (1 + float64(c)/200)
	total := int64(ms * 1e6)
	s := result.Sample{Cell: cell, Protocol: g, Path: p, Conns: c, Run: run, Warmup: run == 0, User: u,
		Local: "192.0.2.2:" + strconv.Itoa(32768+r.IntN(28000)), Remote: "192.0.2.1:80", Start: start,
		FirstByteNS: total * 9 / 10, TotalNS: total, BytesIn: 3200, BytesOut: 90, Marker: "200 OK, 4 objects"}
	if g == "http" {
		s.ResolveNS, s.ConnectNS = total/10, total/5
		s.WireNS, s.ClientTurnNS = total*8/10, total/20
	} else {
		s.Marker, s.BytesIn, s.BytesOut = "NOERROR, 1 A", 58, 30
	}
	if r.IntN(500) == 0 {
		s.Marker, s.Err, s.ErrKind, s.TotalNS = "", "read: connection reset by peer", "reset", total/2
	}
	return s
}

// writerCPU feeds a writer rate samples a second for secs seconds, to a
// file in the temporary directory, and prints the process's CPU time
// per second of it (the writer's goroutine and the feeding; the feeding
// alone is measured first, into nothing).
func writerCPU(compressed bool, rate, secs int) error {
	// A second's worth of distinct samples (times, ports, starts), fed
	// in 10 ms batches: repeated after a second, past zstd's window.
	r := rand.New(rand.NewPCG(1, 2))
	pool := make([]result.Sample, rate)
	start := time.Now().UTC()
	for i := range pool {
		pool[i] = sample(r, "dns", "ipv4", "dns/ipv4/100", 100, 1, i%100, 1, 0, start.Add(time.Duration(i)*10*time.Microsecond))
	}
	per := rate / 100
	feed := func(emit func(result.Sample)) time.Duration {
		before := cpuTime()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for k := range secs * 100 {
			<-tick.C
			for _, s := range pool[(k%100)*per : (k%100+1)*per] {
				emit(s)
			}
		}
		return cpuTime() - before
	}
	idle := feed(func(result.Sample) {})
	f, err := os.CreateTemp("", "synth-writer-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w := result.NewWriter(f)
	form := "plain"
	if compressed {
		w, form = result.NewCompressedWriter(f), "zstd"
	}
	w.Header(result.Header{Name: "cpu"})
	used := feed(w.Sample)
	if err := w.Close(); err != nil {
		return err
	}
	n, b := w.Written()
	fmt.Printf("writer %s: %d samples/s for %d s: %.3f CPU s/s (feeding alone %.3f), %.1f bytes/sample\n",
		form, rate, secs, (used-idle).Seconds()/float64(secs), idle.Seconds()/float64(secs), float64(b)/float64(n))
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
