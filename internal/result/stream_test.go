package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fastSeeds are sample lines as v6lab writes them, and near misses.
var fastSeeds = []string{
	`{"kind":"sample","cell":"dns/ipv4/100","proto":"dns","path":"ipv4","conns":100,"run":0,"warmup":true,"user":52,"local":"127.0.0.1:58386","remote":"127.0.0.1:5353","start":"2026-11-26T15:41:47.394943404Z","first_byte_ns":267518,"total_ns":267518,"bytes_in":58,"bytes_out":30,"marker":"NOERROR, 1 A"}`,
	`{"kind":"sample","cell":"http/dual/1","proto":"http","path":"dual","conns":1,"run":3,"user":0,"start":"2026-01-02T03:04:05Z","total_ns":1,"bytes_in":0,"bytes_out":0,"err":"connect: refused","err_kind":"refused","metrics":{"ipv6_won":1,"he_attempts":2,"he_a_ms":0.0125,"x":-1.5e-7}}`,
	`{"kind":"sample","cell":"c","proto":"p","path":"ipv6","conns":1,"run":1,"user":0,"start":"2026-01-02T03:04:05Z","total_ns":5,"bytes_in":0,"bytes_out":0,"metrics":{}}`,
	`{"kind":"sample","cell":"c","conns":1,"run":1,"user":0,"start":"2026-01-02T03:04:05Z","total_ns":5,"wire_ns":4,"wire_first_byte_ns":3,"client_turn_ns":2,"resolve_ns":1,"connect_ns":2,"tls_ns":3,"dns_local":"[::1]:5","bytes_in":0,"bytes_out":0,"marker":"200 OK, é"}`,
	`{"kind":"sample","cell":"c","cell":"d","total_ns":5}`,
	`{"kind":"sample","Cell":"c","total_ns":5}`,
	`{"kind":"sample","cell":"c\"","total_ns":5}`,
	`{"kind":"sample","cell":null,"total_ns":5}`,
	`{"kind":"sample","conns":1.0,"total_ns":5}`,
	`{"kind":"sample","conns":01,"total_ns":5}`,
	`{"kind":"sample","total_ns":-0,"run":-3}`,
	`{"kind":"sample","total_ns":99999999999999999999}`,
	`{"kind":"sample","metrics":{"a":1e400}}`,
	`{"kind":"sample","metrics":{"a":1,"a":2}}`,
	`{"kind":"sample","start":"2026-13-02T03:04:05Z"}`,
	`{"kind":"sample","warmup":tru}`,
	`{"kind":"sample","total_ns":5} `,
	`{"kind":"sample","total_ns":5}x`,
	`{"kind":"sample","intervals":[{"start_ns":0,"end_ns":1,"bytes":2}]}`,
	`{"kind":"sample","kind":"run"}`,
	"{\"kind\":\"sample\",\"cell\":\"\xff\"}",
}

// slowSample decodes a line as the reader's authority does.
func slowSample(line []byte) (Sample, error) {
	var s Sample
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return s, err
	}
	if probe.Kind != KindSample {
		return s, errors.New("not a sample")
	}
	err := strict(line, &s)
	return s, err
}

// FuzzFastSample: whatever the fast decoder accepts, encoding/json
// accepts too, with the same result.
func FuzzFastSample(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast Sample
		if !decodeSampleFast(line, &fast) {
			return
		}
		slow, err := slowSample(line)
		if err != nil {
			t.Fatalf("fast decoder took %q, encoding/json refuses it: %v", line, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", line, fast, slow)
		}
	})
}

func TestFastSampleTakesWhatV6labWrites(t *testing.T) {
	for _, s := range fastSeeds[:4] {
		var got Sample
		if !decodeSampleFast([]byte(s), &got) {
			t.Errorf("fast decoder refused %s", s)
		}
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Sample(Sample{Cell: "a/b/1", Protocol: "a", Path: "ipv4", Conns: 1, Run: 2, Warmup: true, User: 3, Local: "1.2.3.4:5",
		Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), TotalNS: 7, WireNS: 6, Metrics: map[string]float64{"m": 0.1}, Marker: "ok", Err: "e", ErrKind: "io",
		TLS: "TLS 1.3", Kept: true, Resumed: true, ZeroRTT: true, Again: 3, AgainConns: 2})
	w.Close()
	var got Sample
	if !decodeSampleFast(bytes.TrimSpace(buf.Bytes()), &got) {
		t.Fatalf("fast decoder refused the writer's line %s", buf.Bytes())
	}
	if got.TLS != "TLS 1.3" || !got.Kept || !got.Resumed || !got.ZeroRTT || got.Again != 3 || got.AgainConns != 2 {
		t.Errorf("the connection's typed fields read back as %q %v %v %v %d %d", got.TLS, got.Kept, got.Resumed, got.ZeroRTT, got.Again, got.AgainConns)
	}
}

func TestCompressedRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewCompressedWriter(&buf)
	w.Header(Header{Name: "t", Target: "loopback", Baseline: "ipv4"})
	for run := range 3 {
		for i := range 1000 {
			w.Sample(sample(run*1000+i, ""))
		}
		w.Run(Run{Cell: "http/ipv4/1", Protocol: "http", Path: "ipv4", Conns: 1, Run: run, Seq: run, Completed: 1000})
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n, b := w.Written(); n != 3000 || b != int64(buf.Len()) {
		t.Errorf("Written() = %d samples, %d bytes; the file has %d bytes", n, b, buf.Len())
	}
	if !bytes.HasPrefix(buf.Bytes(), zstdMagic) {
		t.Fatal("not zstd")
	}
	f, err := Read(bytes.NewReader(buf.Bytes()), "samples.jsonl.zst")
	if err != nil || len(f.Samples) != 3000 || len(f.Runs) != 3 || f.Truncated {
		t.Fatalf("%v: %d samples, %d runs, truncated %v", err, len(f.Samples), len(f.Runs), f.Truncated)
	}
	if f.Samples[2999].TotalNS != 3000e6 {
		t.Errorf("last sample %+v", f.Samples[2999])
	}
	// zstdcat reads it as the same lines.
	if _, err := exec.LookPath("zstdcat"); err == nil {
		cmd := exec.Command("zstdcat")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("zstdcat: %v", err)
		}
		if n := strings.Count(string(out), "\n"); n != 3004 {
			t.Errorf("zstdcat gave %d lines, want 3004", n)
		}
	} else {
		t.Log("zstdcat not installed (scripts/install-deps installs zstd)")
	}
}

// A compressed file cut anywhere (a killed writer) reads as the lines
// before the cut.
func TestCompressedCutReadsWholeLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewCompressedWriter(&buf)
	w.Header(Header{Name: "t"})
	for i := range 5000 {
		w.Sample(sample(i, ""))
		if i%1000 == 999 {
			w.Sync()
		}
	}
	w.Close()
	full := buf.Bytes()
	prev := -1
	for cut := len(full) / 10; cut < len(full); cut += len(full) / 37 {
		f, err := Read(bytes.NewReader(full[:cut]), "x")
		if errors.Is(err, ErrNoHeader) && prev == -1 {
			continue // cut inside the first block: nothing was written out yet
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(f.Samples) < prev {
			t.Fatalf("cut at %d: %d samples, fewer than at an earlier cut (%d)", cut, len(f.Samples), prev)
		}
		prev = len(f.Samples)
		for i, s := range f.Samples {
			if s.Run != i {
				t.Fatalf("cut at %d: sample %d is run %d", cut, i, s.Run)
			}
		}
	}
	if prev < 4000 {
		t.Errorf("the last cut kept only %d samples", prev)
	}
}

// FuzzFastEncode: the writer's own encoding of a sample is
// encoding/json's, byte for byte, whatever the strings hold.
func FuzzFastEncode(f *testing.F) {
	f.Add("dns/ipv4/100", "127.0.0.1:5353", "NOERROR, 1 A", "", int64(267518), int64(1764171707394943404), true, "", 0.0)
	f.Add("c\"\\\x00\x1f\x7f", "é\u2028\u2029\xff\xfe", "<&>", "timeout", int64(-5), int64(0), false, "h3", 6.068799)
	f.Add("\b\f\n\r\t", "", "\U0001F600", "x", int64(1<<62), int64(-9e18), false, "h2", 1e-7)
	f.Add("http/ipv4/10", "", "", "", int64(1), int64(1), false, "\xff", 1e21)
	f.Add("http/ipv4/10", "", "", "", int64(1), int64(1), false, "h2", math.NaN())
	f.Fuzz(func(t *testing.T, cell, remote, marker, errText string, total, startNS int64, warm bool, negotiated string, metric float64) {
		s := Sample{Kind: KindSample, Cell: cell, Protocol: marker, Path: remote, Conns: int(total % 1000), Run: 3, Warmup: warm,
			User: int(total % 7), Local: cell, Remote: remote, DNSLocal: errText, Start: time.Unix(0, startNS).UTC(),
			ResolveNS: total / 3, ConnectNS: total % 5, TotalNS: total, WireNS: total / 2, ClientTurnNS: total / 9,
			BytesIn: total % 1000, Negotiated: negotiated, Marker: marker, Err: errText, ErrKind: ErrKind(errText),
			TLS: negotiated, Kept: warm, Resumed: total%2 == 0, ZeroRTT: total%3 == 0, Again: int(total % 4), AgainConns: int(total % 3)}
		if negotiated != "" {
			s.Metrics = map[string]float64{"ttfb_ms": metric, negotiated: -metric, "a" + cell: metric / 3}
		}
		got, ok := appendSample(nil, &s)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		werr := enc.Encode(s)
		if !ok {
			if werr == nil && s.Start.Year() >= 0 && s.Start.Year() < 10000 && !math.IsNaN(metric) && !math.IsInf(metric, 0) {
				t.Fatalf("left to encoding/json: %+v", s)
			}
			return
		}
		if werr != nil {
			t.Fatalf("encoding/json refuses %+v (%v), the writer wrote %s", s, werr, got)
		}
		if string(got) != want.String() {
			t.Fatalf("\n got %s\nwant %s", got, want.String())
		}
	})
}

// BenchmarkAppendSample: the writer's cost per sample, an HTTP/1.1
// sample's and an HTTP/3 one's (negotiated, two metrics), against
// encoding/json's for the latter.
func BenchmarkAppendSample(b *testing.B) {
	s := Sample{Kind: KindSample, Cell: "http/ipv4/10", Protocol: "http", Path: "ipv4", Conns: 10, User: 3, Local: "127.0.0.1:52381",
		Remote: "127.0.0.1:17982", Start: time.Now().UTC(), TotalNS: 6756141, WireNS: 5831822, BytesIn: 5914, BytesOut: 2556, Marker: "200 OK"}
	h3 := s
	h3.Negotiated, h3.Metrics = "h3", map[string]float64{"handshake_ms": 6.068799, "ttfb_ms": 6.637364}
	for _, c := range []struct {
		name string
		s    *Sample
	}{{"http1", &s}, {"h3", &h3}} {
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf, _ = appendSample(buf[:0], c.s)
			}
		})
	}
	b.Run("h3-encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(h3)
		}
	})
}

// TestKeptSampleHasNoByteCounts: a kept transaction's byte counts are
// absent from its line (docs/formats.md), by the fast encoder and by
// encoding/json (a sample with metrics), not written as 0 (trial7 F5); a
// line of an older result with "bytes_in":0 reads back the same.
func TestKeptSampleHasNoByteCounts(t *testing.T) {
	for _, m := range []map[string]float64{nil, {"kept_ipv6": 1}} {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		w.Sample(Sample{Cell: "a/b/1", Protocol: "a", Path: "ipv4", Conns: 1, Run: 2, Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			TotalNS: 7, Kept: true, Marker: "200 OK", Metrics: m})
		w.Sample(Sample{Cell: "a/b/1", Protocol: "a", Path: "ipv4", Conns: 1, Run: 2, Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			TotalNS: 7, BytesIn: 38000, BytesOut: 90, Marker: "200 OK", Metrics: m})
		w.Close()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || strings.Contains(lines[0], "bytes_") || !strings.Contains(lines[1], `"bytes_in":38000,"bytes_out":90`) {
			t.Errorf("metrics %v: %q", m, lines)
		}
	}
	if b, err := json.Marshal(Sample{Cell: "a/b/1", TotalNS: 7, Kept: true}); err != nil || bytes.Contains(b, []byte("bytes_")) {
		t.Errorf("encoding/json: %s %v", b, err)
	}
	var old Sample
	if !decodeSampleFast([]byte(fastSeeds[2]), &old) || old.BytesIn != 0 || old.BytesOut != 0 || old.TotalNS != 5 {
		t.Errorf("an older line with bytes 0: %+v", old)
	}
}

// lockedBuffer is a file the writer writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Samples that come one at a time, as a run's users finish, do not wake
// the writer one by one: it gathers them (a few takes for 2,000 samples
// over 100 ms, where each had been a take and a hand-off between
// goroutines), and a sample alone after a quiet moment still reaches
// the file without a Sync, within FlushEvery.
func TestWriterGathersSamplesAndStillWritesAQuietOne(t *testing.T) {
	var out lockedBuffer
	w := NewCompressedWriter(&out)
	w.Header(Header{Name: "t"})
	w.Sync()
	before := w.batches.Load()
	const n = 2000
	start := time.Now()
	for i := range n {
		for time.Since(start) < time.Duration(i)*50*time.Microsecond {
		}
		w.Sample(sample(i, ""))
	}
	w.Sync()
	takes := w.batches.Load() - before
	if takes > n/10 {
		t.Errorf("%d samples over %v took %d takes of the queue, want them gathered (at most %d)", n, time.Since(start).Round(time.Millisecond), takes, n/10)
	}
	w.Sample(sample(n, "the quiet one"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := Read(bytes.NewReader(out.bytes()), "samples.jsonl.zst")
		if err == nil && len(f.Samples) == n+1 && f.Samples[n].Err == "the quiet one" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last sample never reached the file without a Sync (%v, %d samples read)", err, len(f.Samples))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
