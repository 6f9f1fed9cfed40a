package sitelab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLoadReadsTheExampleLab(t *testing.T) {
	s, err := Load("../../../../docs/examples/lab.sites")
	if err != nil {
		t.Fatal(err)
	}
	slow, ok := s.ByName("slow6.v6lab.test")
	if !ok || slow.Delay[1] == 0 || slow.Delay[0] != 0 || slow.Expect != "ipv6_slower" {
		t.Errorf("slow6: %+v", slow)
	}
	p, _ := s.ByName("partial.v6lab.test")
	if len(p.Objects) != 1 || p.Objects[0] != "cdn4.v6lab.test" {
		t.Errorf("partial: %+v", p)
	}
	for _, x := range s {
		if x.Expect == "" {
			t.Errorf("%s: no expected verdict", x.Name)
		}
	}
}

func TestLoadNamesTheLineAndProperty(t *testing.T) {
	for text, want := range map[string]string{
		"a.test\nb.test delay6=fast\n":       ":2: delay6: \"fast\"",
		"a.test\nlocalhost\n":                ":2: \"localhost\" is not a host name",
		"a.test objects=c.test\n":            ":1: objects: c.test is not a site",
		"a.test expect=quick\n":              ":1: expect: \"quick\" is not a verdict",
		"a.test teleport\n":                  ":1: \"teleport\" is not a property",
		"a.test\n# x\na.test\n":              ":3: a.test is listed already at line 1",
		"# nothing\n":                        "lists no site",
		"a.test hang redirect-loop\n":        ":1: hang, redirect-loop and redirect-literal: give one",
		"a.test no-aaaa=yes\n":               ":1: no-aaaa takes no value",
		"a.test delay4=2m\n":                 ":1: delay4",
		"a.test delay4=5ms delay6=-1ms\n":    ":1: delay6",
		"a.test objects=b.test,not_a.name\n": ":1: objects:",
		// trial4: expect= was never checked against the properties
		"a.test no-aaaa expect=same\n": ":1: expect: the site has no AAAA (no-aaaa), so a survey judges it no_aaaa, never same",
		"a.test expect=no_aaaa\n":      ":1: expect: no_aaaa is the verdict of a site without AAAA: give the site no-aaaa",
		"a.test expect=ipv6_only\n":    ":1: expect: every lab site has an A record",
		// trial4 F14: the trailing dot was "a label of 0 bytes"
		"a.test\nb.test.\n":                ":2: \"b.test.\" is not a host name: it ends with a dot (a fully-qualified name's root): give it as b.test",
		"a.test objects=b.test.\nb.test\n": ":1: objects: \"b.test.\" is not a host name: it ends with a dot",
		// review: contradictions were accepted
		"a.test\nb.test no-aaaa blackhole6\n":                                           ":2: blackhole6: the site has no AAAA (no-aaaa)",
		"a.test no-aaaa delay6=10ms\n":                                                  ":1: delay6: the site has no AAAA (no-aaaa)",
		"a.test blackhole6 delay6=10ms\n":                                               ":1: delay6: the site's IPv6 address is blackholed",
		"a.test delay6=10ms delay6=20ms\n":                                              ":1: delay6: given twice (delay6=10ms and delay6=20ms)",
		"a.test hang hang\n":                                                            ":1: hang: given twice",
		"a.test expect=same expect=failed\n":                                            ":1: expect: given twice",
		"a.test objects=b.test objects=b.test\nb.test\n":                                ":1: objects: given twice",
		"a.test objects=b.test,b.test\nb.test\n":                                        ":1: objects: b.test is listed twice",
		"a.test objects=a.test\n":                                                       ":1: objects: a cycle: a.test → a.test",
		"x.test\na.test objects=b.test\nb.test objects=c.test\nc.test objects=a.test\n": ":2: objects: a cycle: a.test → b.test → c.test → a.test",
	} {
		name := filepath.Join(t.TempDir(), "lab.sites")
		os.WriteFile(name, []byte(text), 0o644)
		_, err := Load(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
	name := filepath.Join(t.TempDir(), "ok.sites")
	os.WriteFile(name, []byte("a.test delay4=5ms delay6=7ms expect=ipv6_slower objects=b.test # comment\nb.test blackhole6\nc.test objects=a.test,b.test\n"), 0o644)
	s, err := Load(name)
	if err != nil || len(s) != 3 || s[0].Delay != [2]time.Duration{5 * time.Millisecond, 7 * time.Millisecond} || s[1].NoAAAA || !s[1].Blackhole6 {
		t.Errorf("%v %+v", err, s)
	}
	if got := s.Names(); got != "a.test\nb.test\nc.test\n" {
		t.Errorf("names %q", got)
	}
}

// TestLoadRefusesWhatNeverEnds: a FIFO or a device is refused before it is
// read (it would never end), a line too long is named by its line, and a
// leading byte order mark is no part of the first name.
func TestLoadRefusesWhatNeverEnds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "f.sites")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{fifo: "not a regular file (a named pipe", "/dev/zero": "/dev/zero is not a regular file", dir: "not a regular file"} {
		done := make(chan error, 1)
		go func() { _, err := Load(name); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", name, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Load still reads after 10 s", name)
		}
	}
	long := filepath.Join(dir, "long.sites")
	os.WriteFile(long, []byte("a.test\n"+strings.Repeat("b", 70000)+"\n"), 0o644)
	if _, err := Load(long); err == nil || !strings.Contains(err.Error(), long+":2: a line longer than 4096 bytes") {
		t.Errorf("long line: %v", err)
	}
	bom := filepath.Join(dir, "bom.sites")
	os.WriteFile(bom, []byte("\ufeffa.test\n"), 0o644)
	if s, err := Load(bom); err != nil || len(s) != 1 || s[0].Name != "a.test" {
		t.Errorf("BOM: %v %+v", err, s)
	}
}

// TestCheckLabSaysNoLabIsUp: a lab name no lab is up under is named as
// such, not as a lab that serves no sites.
func TestCheckLabSaysNoLabIsUp(t *testing.T) {
	name := fmt.Sprintf("nope%d", os.Getpid()%100000)
	err := CheckLab(name)
	if err == nil || !strings.Contains(err.Error(), "no lab "+name+" is up") {
		t.Errorf("%v", err)
	}
}
