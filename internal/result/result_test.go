package result

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sample(i int, err string) Sample {
	return Sample{Cell: "http/ipv4/1", Protocol: "http", Path: "ipv4", Conns: 1, Run: i, User: 0,
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), TotalNS: int64(i+1) * 1e6, Err: err}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Header(Header{Name: "t", Target: "loopback", Baseline: "ipv4", Sysctls: map[string]string{"a": "1"}})
	for i := 0; i < 100; i++ {
		w.Sample(sample(i, ""))
	}
	w.Sample(sample(100, "connect: refused"))
	w.Run(Run{Cell: "http/ipv4/1", Protocol: "http", Path: "ipv4", Conns: 1, Completed: 100, Failed: 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Read(&buf, "samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Name != "t" || f.Header.FormatVersion != FormatVersion || f.Header.Sysctls["a"] != "1" {
		t.Errorf("header %+v", f.Header)
	}
	if len(f.Samples) != 101 || len(f.Runs) != 1 || f.Truncated {
		t.Fatalf("%d samples, %d runs, truncated %v", len(f.Samples), len(f.Runs), f.Truncated)
	}
	if f.Samples[100].OK() || f.Samples[99].Total() != 100*time.Millisecond {
		t.Errorf("samples decoded wrong: %+v", f.Samples[99])
	}
}

func TestSyncMakesSamplesVisible(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Header(Header{Name: "t"})
	w.Sample(sample(0, ""))
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("after Sync the file holds %d lines, want 2", n)
	}
	w.Close()
}

func TestTruncatedLastLineIsKeptOut(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Header(Header{Name: "t"})
	w.Sample(sample(0, ""))
	w.Sample(sample(1, ""))
	w.Close()
	cut := buf.String()[:buf.Len()-20]
	f, err := Read(strings.NewReader(cut), "x")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Truncated || len(f.Samples) != 1 {
		t.Fatalf("truncated %v with %d samples", f.Truncated, len(f.Samples))
	}
}

func TestReadErrorsNameTheLine(t *testing.T) {
	hdr := `{"kind":"header","format_version":1,"tool":"v6lab","tool_version":"x","name":"n","created":"2026-01-01T00:00:00Z","target":"loopback","baseline":"ipv4"}`
	cases := []struct {
		name, file, want string
	}{
		{"no header", `{"kind":"sample","total_ns":1}` + "\n", "x: first line is not a v6lab header"},
		{"empty", "", "first line is not a v6lab header"},
		{"unknown field", hdr + "\n" + `{"kind":"sample","total_ns":1,"bogus":2}` + "\n", `x:2: json: unknown field "bogus"`},
		{"unknown kind", hdr + "\n" + `{"kind":"weird"}` + "\n", `x:2: field kind: unknown record kind "weird"`},
		{"negative time", hdr + "\n" + `{"kind":"sample","total_ns":-5}` + "\n", "x:2: field total_ns: negative duration -5"},
		{"garbage mid-file", hdr + "\nnot json\n{\"kind\":\"run\"}\n", "x:2: not a JSON object"},
		{"newer format", strings.Replace(hdr, `"format_version":1`, `"format_version":99`, 1) + "\n", "x:1: format_version 99 not supported"},
		{"second header", hdr + "\n" + hdr + "\n", "x:2: second header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.file), "x")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Read(strings.NewReader(""), "x"); !errors.Is(err, ErrNoHeader) {
		t.Errorf("empty file: %v is not ErrNoHeader", err)
	}
}

func TestCellKey(t *testing.T) {
	if k := CellKey("http", "ipv6", 5000); k != "http/ipv6/5000" {
		t.Fatal(k)
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Header(Header{Name: "seed"})
	w.Sample(sample(0, ""))
	w.Run(Run{Cell: "c"})
	w.Close()
	f.Add(buf.Bytes())
	var z bytes.Buffer // the same, compressed as v6lab writes it
	zw := NewCompressedWriter(&z)
	zw.Header(Header{Name: "seed"})
	zw.Sample(sample(0, ""))
	zw.Run(Run{Cell: "c"})
	zw.Close()
	f.Add(z.Bytes())
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"kind":"header","format_version":1}` + "\n" + `{"kind":"sample"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Read(bytes.NewReader(b), "fuzz")
		if err == nil && file.Header.Kind != KindHeader {
			t.Fatal("accepted a file without a header")
		}
		if err == nil {
			for _, s := range file.Samples {
				if s.TotalNS < 0 {
					t.Fatal("negative duration accepted")
				}
			}
		}
	})
}

func TestNewDirNeverReuses(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)
	a, err := NewDir(root, "quick", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewDir(root, "quick", now)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Base(a) != "quick-20261122T140000Z" || filepath.Base(b) != "quick-20261122T140000Z-2" {
		t.Fatalf("dirs %s, %s", a, b)
	}
}

// slowWriter makes the writer fall behind, so senders fill its queue and
// wait for room.
type slowWriter struct{ buf bytes.Buffer }

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return s.buf.Write(p)
}

// Senders more than the queue holds, at once, behind a slow file: every
// record is written, each sender's in its order, and Close waits for the
// last of them.
func TestWriterKeepsEveryRecordInOrder(t *testing.T) {
	const senders, each = 4, 3 * queueMax
	var out slowWriter
	w := NewWriter(&out)
	w.Header(Header{Name: "t"})
	done := make(chan struct{})
	for u := range senders {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				s := sample(i, "")
				s.User = u
				w.Sample(s)
			}
		}()
	}
	for range senders {
		<-done
	}
	w.Run(Run{Cell: "http/ipv4/1", Completed: senders * each})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Read(&out.buf, "samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Samples) != senders*each || len(f.Runs) != 1 {
		t.Fatalf("%d samples and %d runs, want %d and 1", len(f.Samples), len(f.Runs), senders*each)
	}
	next := make([]int, senders)
	for _, s := range f.Samples {
		if s.Run != next[s.User] {
			t.Fatalf("user %d: sample %d after %d", s.User, s.Run, next[s.User]-1)
		}
		next[s.User]++
	}
	if n, _ := w.Written(); n != senders*each {
		t.Errorf("Written() says %d samples", n)
	}
}
