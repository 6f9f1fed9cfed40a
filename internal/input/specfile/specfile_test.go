package specfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type dur time.Duration

func (d *dur) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q", b)
	}
	*d = dur(v)
	return nil
}

type inner struct {
	Rate  string  `yaml:"rate"`
	Loss  float64 `yaml:"loss"`
	Delay dur     `yaml:"delay"`
}

type spec struct {
	Name  string           `yaml:"name"`
	Runs  int              `yaml:"runs"`
	Size  uint32           `yaml:"size"`
	On    bool             `yaml:"on"`
	Conns []int            `yaml:"conns"`
	Inner inner            `yaml:"inner"`
	Links map[string]inner `yaml:"links"`
	Opt   *inner           `yaml:"opt"`
	//lint:ignore U1000 an unexported field must stay unknown to the decoder (see the "skip" case)
	skip int
}

func TestDecodeFillsEveryKind(t *testing.T) {
	src := `name: x
runs: 11
size: 1_000
on: true
conns: [1, 10, 100]
inner:
  rate: 10M
  loss: 0.5
  delay: 20ms
links:
  r1-r2: {rate: 100M}
opt:
  rate: 1G
`
	var s spec
	d, err := Decode("a.yaml", []byte(src), &s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "x" || s.Runs != 11 || s.Size != 1000 || !s.On || len(s.Conns) != 3 || s.Conns[2] != 100 ||
		s.Inner.Rate != "10M" || s.Inner.Loss != 0.5 || time.Duration(s.Inner.Delay) != 20*time.Millisecond ||
		s.Links["r1-r2"].Rate != "100M" || s.Opt == nil || s.Opt.Rate != "1G" {
		t.Fatalf("decoded %+v", s)
	}
	for field, line := range map[string]int{"name": 1, "inner.loss": 8, "links.r1-r2": 11, "links.r1-r2.rate": 11, "conns[1]": 5, "opt.rate": 13} {
		if got := d.Line(field); got != line {
			t.Errorf("line of %s = %d, want %d", field, got, line)
		}
	}
	if d.Has("inner.delay") != true || d.Has("inner.nope") {
		t.Error("Has is wrong")
	}
	if err := d.Errorf("inner.loss", "too much"); err.Error() != "a.yaml:8: inner.loss: too much" {
		t.Errorf("Errorf = %q", err)
	}
	if err := d.Errorf("missing", "needed"); err.Error() != "a.yaml: missing: needed" {
		t.Errorf("Errorf of a missing field = %q", err)
	}
}

func TestDecodeErrorsNameFileLineAndField(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "f.yaml: the file is empty"},
		{"# only a comment\n", "f.yaml: the file is empty"},
		{"name: x\nrunz: 3\n", `f.yaml:2: runz: unknown field: did you mean runs? (known here: conns, inner, links, name, on, opt, runs, size)`},
		{"inner:\n  rat: 1\n", `f.yaml:2: inner.rat: unknown field: did you mean rate? (known here: delay, loss, rate)`},
		{"skip: 1\n", `f.yaml:1: skip: unknown field (known here: conns, inner, links, name, on, opt, runs, size)`},
		{"runs: ten\n", `f.yaml:1: runs: want a whole number, not "ten"`},
		{"size: -1\n", `f.yaml:1: size: want a whole number of at least 0, not "-1"`},
		{"on: yes\n", `f.yaml:1: on: want true or false, not "yes"`},
		{"inner:\n  loss: lots\n", `f.yaml:2: inner.loss: want a number, not "lots"`},
		{"inner:\n  delay: soon\n", `f.yaml:2: inner.delay: bad duration "soon"`},
		{"conns: 5\n", `f.yaml:1: conns: want a list, not "5"`},
		{"conns: [1, x]\n", `f.yaml:1: conns[1]: want a whole number, not "x"`},
		{"name: [a]\n", `f.yaml:1: name: want a single value, not a list`},
		{"inner: 3\n", `f.yaml:1: inner: want a mapping of fields, not "3"`},
		{"runs:\n", `f.yaml:1: runs: has no value`},
		{"name: a\nname: b\n", `f.yaml:2: name: given twice (first at line 1)`},
		{"links:\n  a: {rate: 1}\n  a: {rate: 2}\n", `f.yaml:3: links.a: given twice (first at line 2)`},
		{"name: x\n---\nname: y\n", `f.yaml:2: a second YAML document: one file holds one spec`},
		{"name: [x\n", "f.yaml:1: not valid YAML: the '[' on this line is not closed, or an item in it lacks its ',' (did not find expected ',' or ']')"},
		// The scanner's own line is right: a mis-indented line further
		// down is not what it read.
		{"name: a: b\nruns: 3\n   size: 1\n", "f.yaml:1: not valid YAML: mapping values are not allowed in this context"},
		// The trial's (22): the '[' on line 4, which the YAML library put
		// on line 3 (a parser error's line is 0-based there).
		{"name: t\ncells:\n  - protocol: http\n    conns: [1\n", "f.yaml:4: not valid YAML: the '[' on this line is not closed, or an item in it lacks its ',' (did not find expected ',' or ']')"},
		{"name: t\ncells:\n  - {protocol: http, conns: [1]\n", "f.yaml:3: not valid YAML: the '{' on this line is not closed, or an item in it lacks its ',' (did not find expected ',' or '}')"},
		// A key one space short of its siblings: the parser names the
		// line its list item began on (3), the file's mistake is on 4.
		{"name: t\ncells:\n  - a: 1\n   b: 1\n", "f.yaml:4: not valid YAML: this line is indented 3 spaces, lining up with no block above it (at 0, 2 or 4 spaces: a key or '-' item lines up with its siblings; only a line ending in ':' or a '-' opens a deeper one); the parser's words, in the block from line 3: did not find expected '-' indicator"},
		{"name: y\n cells: 3\n", "f.yaml:2: not valid YAML: this line is indented 1 space, lining up with no block above it (at 0 spaces: a key or '-' item lines up with its siblings; only a line ending in ':' or a '-' opens a deeper one); the parser's words: mapping values are not allowed in this context"},
		{"- a\n- b\n", `f.yaml:1: want a mapping of fields, not a list`},
		// An IPv6 address in an unquoted flow list (resolve as the docs
		// once wrote it): say to quote it.
		{"name: x\nopt: [localhost=127.0.0.1,::1]\n", `f.yaml:2: not valid YAML: did not find expected node content; an item of the [...] on this line holds a colon (::1), which YAML reads as a key: quote such a value, commas and all: ["name=192.0.2.1,::1"]`},
	} {
		var s spec
		_, err := Decode("f.yaml", []byte(c.src), &s)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got  %v\n want %s", c.src, err, c.want)
		}
	}
}

// TestMisIndentedLineIsNamed: go.yaml.in/yaml/v3 names the line where
// the block it was parsing began; the error names the line whose
// indentation broke it (trial7 F8: bad6.yaml's key on line 5, named as
// line 4), and the parser's line beside it when they differ.
func TestMisIndentedLineIsNamed(t *testing.T) {
	const cell = "name: t\ncells:\n  - protocol: http\n"
	for _, c := range []struct {
		name, src  string
		line, from int // from: the parser's line, named when not line
		tab        bool
	}{
		{"trial7's bad6.yaml: a key one space short", "name: t\nwhere: hosts\ncells:\n  - protocol: http\n    url: https://x.test/\n   http_version: 2\n", 6, 4, false},
		{"a key one space short, lines below it", cell + "    url: https://x.test/\n    paths: [ipv4]\n   conns: [1]\n    runs: 3\n", 6, 3, false},
		{"a key one space deep", cell + "    url: https://x.test/\n     paths: [ipv4]\n", 5, 5, false},
		{"a tab", cell + "\tpaths: [ipv4]\n", 4, 3, true},
		{"a tab after spaces", cell + "    \tpaths: [ipv4]\n", 4, 3, true},
		{"past a blank line and a comment", cell + "    paths: [ipv4]\n\n  # the users\n   conns: [1]\n", 7, 3, false},
		{"a list's item one space short", cell + "    paths:\n      - ipv4\n     - ipv6\n", 6, 3, false},
		{"a list item one space deep", "name: t\ncells:\n - protocol: http\n  - protocol: dns\n", 4, 3, false},
		{"a top-level key indented", "name: t\nlab:\n  rate: 1\n conns: 3\n", 4, 4, false},
		{"after a block scalar and a flow list over two lines", cell + "    note: |\n      text: at any\n        indent\n    paths: [ipv4,\n  ipv6]\n   conns: [1]\n", 9, 3, false},
		{"after an anchored block and its alias", "name: t\nlab: &l\n  rate: 1\nother: *l\ncells:\n  - protocol: http\n    paths: [ipv4]\n   conns: [1]\n", 8, 6, false},
		{"a quoted '#' and ':' are no comment or key", cell + "    url: 'https://x.test/#a: b'\n    paths: [ipv4]  # c\n   conns: [1]\n", 6, 3, false},
	} {
		var s struct {
			Name  string
			Where string
			Lab   map[string]int
			Other map[string]int
			Cells []map[string]any
		}
		_, err := Decode("f.yaml", []byte(c.src), &s)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v, want a syntax error", c.name, err)
			continue
		}
		what := "lining up with no block above it"
		if c.tab {
			what = "a tab in this line's indentation"
		}
		from := ", in the block from line " + strconv.Itoa(c.from) + ":"
		if e.Line != c.line || !strings.Contains(e.Msg, what) || strings.Contains(e.Msg, from) != (c.from != c.line) {
			t.Errorf("%s: %v, want line %d (the parser's %d) and %q", c.name, err, c.line, c.from, what)
		}
	}
}

// TestValidFilesAreNotMisIndented: misIndented reads every YAML file of
// the repository that the parser takes as laid out right: a file it
// misjudged would have an error moved to a line that is not wrong.
func TestValidFilesAreNotMisIndented(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../../..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == ".git" {
			return cmpErr(err, filepath.SkipDir)
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var v any
		if yaml.Unmarshal(data, &v) != nil {
			return nil
		}
		n++
		if b, bad := misIndented(data, 1); bad {
			t.Errorf("%s:%d: valid YAML taken as mis-indented (%s)", p, b.line, b.text())
		}
		return nil
	})
	if err != nil || n < 20 {
		t.Fatalf("read %d valid YAML files: %v", n, err)
	}
	for _, src := range []string{
		"lab: &l\n  rate: 1\nother: *l\n",
		"cells: !!seq\n  - a\n",
		"cells:\n- protocol: http\n  paths:\n  - ipv4\n- - 1\n  - 2\n",
		"note: |-\n  a: b\n    c\nruns: 3\n",
		"conns: [1,\n    2]\nx: {a: 1,\n b: 2}\n",
		"# top\nname: t # it's\n  # indented comment\nruns: 3\n",
		"url: 'https://x/#a: b'\nq: \"it's [\"\nr: 1\n",
	} {
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if b, bad := misIndented([]byte(src), 1); bad {
			t.Errorf("%q: line %d taken as mis-indented (%s)", src, b.line, b.text())
		}
	}
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"name: x\nconns: [1,2]\n", "inner: {rate: 1, loss: 2}\n", "a: &x 1\nb: *x\n", "links:\n  q: {}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var s spec
		_, err := Decode("f.yaml", []byte(src), &s)
		if err != nil && !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Fatalf("error without the file name: %v", err)
		}
	})
}

// TestErrorsQuoteOnlyShortExcerpts: a file that is not a spec at all is
// named as such without quoting it; an unknown key or a bad value is
// quoted escaped and cut short; a huge file is refused by its size.
func TestErrorsQuoteOnlyShortExcerpts(t *testing.T) {
	type spec struct {
		Name string `yaml:"name"`
		Runs int    `yaml:"runs"`
	}
	secret := "root:$6$saltsalt$" + strings.Repeat("h", 80) + ":19000:0:99999:7:::"
	cases := []struct {
		data   string
		want   string
		absent string
	}{
		{secret + "\ndaemon:*:19000:0:99999:7:::\n", "f.yaml:1: not a file of this kind: none of its top-level keys is one of its fields (name, runs)", "saltsalt"},
		{"name: x\n\"" + strings.Repeat("k", 100) + "\\u0007\": 1\n", `f.yaml:2: ` + strings.Repeat("k", 40) + `…: unknown field`, strings.Repeat("k", 41)},
		{"name: x\n\"bell\\u0007\": 1\n", `f.yaml:2: bell\a: unknown field`, "\a"},
	}
	for _, c := range cases {
		var v spec
		_, err := Decode("f.yaml", []byte(c.data), &v)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.absent) {
			t.Errorf("%.30q: %v\nwant %q, without %q", c.data, err, c.want, c.absent)
		}
	}
	long := (&Error{File: "f.yaml", Line: 3, Field: "cells[0].protocol", Msg: strconv.Quote(strings.Repeat("p", 200)) + " is not a protocol"}).Error()
	if len(long) > 120 || !strings.Contains(long, `"`+strings.Repeat("p", 40)+`…" is not a protocol`) {
		t.Errorf("a long value: %s", long)
	}
	// Two short quoted values: the text between them is no quoted value.
	two := (&Error{File: "f.yaml", Msg: `"a" is not "b": ` + strings.Repeat("t", 50) + ` "c"`}).Error()
	if !strings.Contains(two, strings.Repeat("t", 50)) {
		t.Errorf("text between quoted values cut: %s", two)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(big, bytes.Repeat([]byte("a"), MaxFile+1), 0o644)
	if _, err := ReadFile(big); err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") || len(err.Error()) > 200 {
		t.Errorf("a file over the cap: %v", err)
	}
	ok := filepath.Join(t.TempDir(), "ok.yaml")
	os.WriteFile(ok, []byte("name: x\n"), 0o644)
	if b, err := ReadFile(ok); err != nil || string(b) != "name: x\n" {
		t.Errorf("a small file: %q %v", b, err)
	}
}

// TestReadFileRefusesWhatIsNotAFile: a FIFO (which would block the read
// for ever) or a directory is refused at once, named.
func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	for _, name := range []string{fifo, t.TempDir()} {
		if _, err := ReadFile(name); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestATabAfterAnItemsDash (trial9 N11): the scanner names the right line
// but only in its words ("found character that cannot start any token").
func TestATabAfterAnItemsDash(t *testing.T) {
	var s struct{ Cells []map[string]any }
	_, err := Decode("z1.yaml", []byte("cells:\n  - protocol: dns\n  -\tprotocol: http\n    conns: [1]\n"), &s)
	var e *Error
	if !errors.As(err, &e) || e.Line != 3 || !strings.Contains(e.Msg, "a tab after this line's '-'") {
		t.Errorf("%v, want line 3 and a tab after its '-'", err)
	}
}

// TestAnItemAmongKeysAndAKeyAmongItems (trial9 N8): a '-' item at its
// mapping's keys' column, and a key at its list's items' column, line up
// with a block, but of the other kind; the parser named the line above.
func TestAnItemAmongKeysAndAKeyAmongItems(t *testing.T) {
	for _, c := range []struct {
		name, src string
		line      int
	}{
		{"y4: an item among the keys of the item above", "name: t\ncells:\n- protocol: http\n  conns: [1]\n  - protocol: dns\n", 5},
		{"y8: a key among the items", "name: t\ncells:\n  - protocol: http\n  conns: [1]\n", 4},
	} {
		var s struct {
			Name  string
			Cells []map[string]any
		}
		_, err := Decode("y.yaml", []byte(c.src), &s)
		var e *Error
		if !errors.As(err, &e) || e.Line != c.line || !strings.Contains(e.Msg, "a key among '-' items, or a '-' item among keys") {
			t.Errorf("%s: %v, want line %d", c.name, err, c.line)
		}
	}
	// Each kind where it belongs: a list at its key's column, items after
	// it, then the next key.
	var v any
	src := "cells:\n- protocol: http\n  paths:\n  - ipv4\n  - ipv6\n  conns: [1]\n- protocol: dns\nname: t\n"
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Errorf("a valid file: %v", err)
	}
	if b, bad := misIndented([]byte(src), 1); bad {
		t.Errorf("a valid file judged mis-indented at line %d: %s", b.line, b.text())
	}
}

// TestNearestIsATypoOnly: a key one or two edits from a known one (a
// letter swapped, dropped, added or changed) is named as its likely typo;
// a word far from all of them, or a short one two edits away, is not.
func TestNearestIsATypoOnly(t *testing.T) {
	known := []string{"http_version", "keepalive", "runs", "tls", "tls_resume"}
	for word, want := range map[string]string{
		"http_versoin": "http_version", "keepalve": "keepalive", "runz": "runs", "tsl": "tls",
		"tls_resum": "tls_resume", "connections": "", "rtt": "", "xyz": "",
	} {
		if got, ok := Nearest(word, known); got != want || ok != (want != "") {
			t.Errorf("Nearest(%q) = %q %v, want %q", word, got, ok, want)
		}
	}
}
