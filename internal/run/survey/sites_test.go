package survey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeList(t *testing.T, text string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "sites.txt")
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestParseEntryReadsNamesCSVAndTranco(t *testing.T) {
	for line, want := range map[string]string{
		"example.org":                 "example.org",
		"  Example.ORG.  ":            "example.org",
		"1,google.com":                "google.com",
		`"wikipedia.org",42,x`:        "wikipedia.org",
		"same.v6lab.test  delay6=1ms": "same.v6lab.test",
		"xn--bcher-kva.example":       "xn--bcher-kva.example",
	} {
		if e := ParseEntry([]byte(line)); e.Bad != "" || e.Name != want {
			t.Errorf("%q: got %+v, want %s", line, e, want)
		}
	}
	for _, line := range []string{"localhost", "192.0.2.1", "2001:db8::1", "bad_name.org", "-a.org", "a..org", "example.123", strings.Repeat("a", MaxLine+10)} {
		if e := ParseEntry([]byte(line)); e.Bad == "" {
			t.Errorf("%q: accepted as %q", line, e.Name)
		}
	}
}

func TestOpenListNamesTheBadLine(t *testing.T) {
	name := writeList(t, "# top sites\nexample.org\n\n1,example.net\nnot a_name\n")
	_, err := OpenList(name, true)
	if err == nil || !strings.Contains(err.Error(), name+":5:") || !strings.Contains(err.Error(), "--skip-invalid") {
		t.Fatalf("got %v, want an error naming %s:5", err, name)
	}
	l, err := OpenList(name, false)
	if err != nil || l.Sites != 3 {
		t.Fatalf("skipping: %v, %+v", err, l)
	}
	var got []string
	if err := l.Each(func(e Entry) bool { got = append(got, e.Name+"/"+e.Bad); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "example.org/" || got[1] != "example.net/" || !strings.HasPrefix(got[2], "not/") {
		t.Errorf("entries: %q", got)
	}
	for _, text := range []string{"", "# only a comment\n\n"} {
		if _, err := OpenList(writeList(t, text), true); err == nil || !strings.Contains(err.Error(), "names no site") {
			t.Errorf("%q: %v", text, err)
		}
	}
	if _, err := OpenList(t.TempDir(), true); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
}

// A list of a million lines streams: counted without being held.
func TestOpenListStreamsALongList(t *testing.T) {
	var b strings.Builder
	for i := range 1_000_000 {
		b.WriteString("s")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(".example\n")
	}
	name := writeList(t, b.String())
	l, err := OpenList(name, true)
	if err != nil || l.Sites != 1_000_000 {
		t.Fatalf("%v %+v", err, l)
	}
	n := 0
	if err := l.Each(func(e Entry) bool { n++; return e.Index < 9 }); err != nil || n != 10 {
		t.Errorf("stopping after 10: %v, %d", err, n)
	}
}

func TestExclusionNamesSubdomains(t *testing.T) {
	x, err := ReadExclusion(writeList(t, "# never\nexample.org\n"))
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{"example.org": "example.org", "www.example.org": "example.org", "example.net": "", "badexample.org": ""} {
		if got := x.Excludes(host); got != want {
			t.Errorf("%s: %q, want %q", host, got, want)
		}
	}
	name := writeList(t, "example.org\nnot a name\n")
	if _, err := ReadExclusion(name); err == nil || !strings.Contains(err.Error(), name+":2:") {
		t.Errorf("bad exclusion: %v", err)
	}
}

func TestOptionsCheckAndUserAgent(t *testing.T) {
	o := Defaults()
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	o.Contact = "mailto:ops@example.org"
	if ua := o.UserAgent("1.2"); ua != "v6lab/1.2 (IPv4/IPv6 survey; +mailto:ops@example.org)" {
		t.Errorf("user agent %q", ua)
	}
	for _, good := range []string{"mailto:ops@example.org", "ops@example.org", "https://example.org/survey", "http://example.org"} {
		o.Contact = good
		if err := o.Check(); err != nil {
			t.Errorf("contact %q: %v", good, err)
		}
	}
	for _, bad := range []string{"me", "x y", "https://", "mailto:me", "ftp:me", "me@localhost-only"} {
		o.Contact = bad
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), "contact") {
			t.Errorf("contact %q accepted: %v", bad, err)
		}
	}
	o.Contact = "mailto:ops@example.org"
	o.Warmup = o.Runs
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "warmup") {
		t.Errorf("warmup = runs: %v", err)
	}
	// trial6 F4: 2 runs with 1 warm-up leave one counted pair, which
	// gives no site a timed verdict: refused, naming runs.
	o.Runs, o.Warmup = 2, 1
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "runs") || !strings.Contains(err.Error(), "at least warmup + 2 (3)") {
		t.Errorf("runs 2, warmup 1: %v", err)
	}
	o.Runs = 3
	if err := o.Check(); err != nil {
		t.Errorf("runs 3, warmup 1: %v", err)
	}
}

// TestErrorsNameTheCharacterInTheFile: a name's character outside ASCII
// is named as the file holds it (ü, not the first byte of its UTF-8), and
// a UTF-8 byte order mark before the first name is skipped.
func TestErrorsNameTheCharacterInTheFile(t *testing.T) {
	if e := ParseEntry([]byte("bücher.de")); !strings.Contains(e.Bad, `label "bücher" holds "ü"`) {
		t.Errorf("bücher.de: %q", e.Bad)
	}
	name := writeList(t, "\ufeffexample.org\nexample.net\n")
	l, err := OpenList(name, true)
	if err != nil || l.Sites != 2 {
		t.Fatalf("list with a BOM: %v %+v", err, l)
	}
	var first string
	l.Each(func(e Entry) bool { first = e.Name; return false })
	if first != "example.org" {
		t.Errorf("first name %q", first)
	}
}
