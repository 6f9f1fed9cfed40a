package report

import (
	"bytes"
	encsv "encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// streamsSpec is two HTTP/2 groups with keepalive, http/2 running extra
// transactions at once on each connection (streams, "" for none); params
// holds it as a probe's header does.
func streamsSpec(streams, params string) string {
	return `{"cells":[{"label":"http","protocol":"http","http_version":"1.1","tls":true},{"label":"http/2","protocol":"http","http_version":"2","tls":true,"keepalive":true` + streams + params + `}]}`
}

// TestStreamsAreSaidEverywhere: a group whose users ran 4 transactions
// at once on each connection (streams: 4) says so in its titles, notes,
// summary.json's cells, results.csv and report.html; one of one at a time
// says nothing of it (trial11 HIGH 1).
func TestStreamsAreSaidEverywhere(t *testing.T) {
	for _, spec := range []string{streamsSpec(`,"streams":4`, ""), streamsSpec("", `,"params":{"streams":"4"}`)} {
		s := Summarize(versionsFile(t, spec, tlsConn, keptConn))
		var txt, csv, js, html bytes.Buffer
		for _, r := range []struct {
			w *bytes.Buffer
			f func(*bytes.Buffer, *Summary) error
		}{
			{&txt, func(w *bytes.Buffer, s *Summary) error { return Text(w, s) }},
			{&csv, func(w *bytes.Buffer, s *Summary) error { return CSV(w, s) }},
			{&js, func(w *bytes.Buffer, s *Summary) error { return JSON(w, s) }},
			{&html, func(w *bytes.Buffer, s *Summary) error { return HTML(w, s) }},
		} {
			if err := r.f(r.w, s); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.Contains(txt.String(), "HTTP/2 (kept connections, 4 at once on each)") {
			t.Errorf("%s: report.txt's titles do not say 4 at once:\n%s", spec, txt.String())
		}
		// Its means are per transaction, one of 4 at once; HTTP/1.1's
		// per connection (trial12).
		if !strings.Contains(txt.String(), "HTTP/2 (kept connections, 4 at once on each): average response time per transaction (4 at once on each connection)") ||
			!strings.Contains(txt.String(), "HTTP/1.1: average response time per connection") {
			t.Errorf("%s: report.txt's means titles:\n%s", spec, txt.String())
		}
		if !strings.Contains(html.String(), "HTTP versions: mean response time per transaction") {
			t.Errorf("%s: report.html's versions plot is per connection", spec)
		}
		if !strings.Contains(txt.String(), "      HTTP/2 (4 at once)  +19.48") {
			t.Errorf("%s: the HTTP versions side by side do not say 4 at once:\n%s", spec, txt.String())
		}
		if !strings.Contains(html.String(), "HTTP/2 (kept connections, 4 at once on each)") {
			t.Errorf("%s: report.html's titles do not say 4 at once", spec)
		}
		// "In short": a verdict line read alone says it too (trial11's
		// leftovers: its titles and notes did, its verdicts did not).
		short := strings.Join(VerdictLines(s), "\n")
		if !strings.Contains(short, "HTTP/2 (4 at once) over ipv6: ") || !strings.Contains(short, "HTTP/1.1 over ipv6: ") || strings.Contains(short, "HTTP/1.1 (") {
			t.Errorf("%s: In short:\n%s", spec, short)
		}
		if !strings.Contains(html.String(), "<strong>HTTP/2 (4 at once) over ipv6</strong>") {
			t.Errorf("%s: report.html's In short does not say 4 at once", spec)
		}
		note := "HTTP/2 ran 4 transactions at once on each connection (streams 4, as h2load -m 4): each transaction's time is under that load"
		if !strings.Contains(strings.Join(s.Notes, "\n"), note) {
			t.Errorf("%s: notes %q", spec, s.Notes)
		}
		if strings.Contains(strings.Join(s.Notes, "\n"), "HTTP/1.1 ran") {
			t.Errorf("the group of one at a time is said to run more: %q", s.Notes)
		}
		var back Summary
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		for _, c := range back.Cells {
			if want := map[string]int{"http": 0, "http/2": 4}[c.Protocol]; c.Streams != want {
				t.Errorf("summary.json cell %s %s %d: streams %d, want %d", c.Protocol, c.Path, c.Conns, c.Streams, want)
			}
		}
		rows, err := encsv.NewReader(&csv).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := slices.Index(rows[0], "streams")
		if col < 0 {
			t.Fatalf("results.csv header %q has no streams", rows[0])
		}
		for _, r := range rows[1:] {
			if want := map[string]string{"http": "", "http/2": "4"}[r[0]]; r[col] != want {
				t.Errorf("results.csv row %q: streams %q, want %q", r, r[col], want)
			}
		}
	}
	s := Summarize(versionsFile(t, streamsSpec("", ""), tlsConn, keptConn))
	var txt bytes.Buffer
	if err := Text(&txt, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "HTTP/2 (kept connections)") || strings.Contains(txt.String(), "at once") {
		t.Errorf("one at a time: %s", txt.String())
	}
}

// TestCompareSaysStreamsDiffer: compare of a group of one transaction at
// a time with the same group's 4 at once names the difference.
func TestCompareSaysStreamsDiffer(t *testing.T) {
	a := Summarize(versionsFile(t, streamsSpec("", ""), tlsConn, keptConn))
	b := Summarize(versionsFile(t, streamsSpec(`,"streams":4`, ""), tlsConn, keptConn))
	v := CompareSummaries("A", a, "B", b)
	notes := strings.Join(v.Notes, "\n")
	if !strings.Contains(notes, "http/2: streams differs: A 1; B 4") {
		t.Errorf("notes %q", v.Notes)
	}
	if strings.Contains(notes, "http: streams") {
		t.Errorf("a group alike on both sides: %q", v.Notes)
	}
	if v = CompareSummaries("A", b, "B", b); strings.Contains(strings.Join(v.Notes, "\n"), "streams differs") {
		t.Errorf("alike: %q", v.Notes)
	}
}

// TestCompareSaysDurationDiffers: compare of a group run sustained
// (duration) with the same group run one transaction a user names the
// difference: the figures are not of the same load (trial13 M3).
func TestCompareSaysDurationDiffers(t *testing.T) {
	a := Summarize(versionsFile(t, streamsSpec("", ""), tlsConn, keptConn))
	b := Summarize(versionsFile(t, streamsSpec(`,"duration":"2s"`, ""), tlsConn, keptConn))
	notes := strings.Join(CompareSummaries("A", a, "B", b).Notes, "\n")
	if !strings.Contains(notes, "http/2: duration differs: A none (one transaction a user a run); B 2s a run (each user repeating transactions)") ||
		strings.Contains(notes, "http: duration") {
		t.Errorf("notes %q", notes)
	}
	if notes := CompareSummaries("A", b, "B", b).Notes; strings.Contains(strings.Join(notes, "\n"), "duration differs") {
		t.Errorf("alike: %q", notes)
	}
}
