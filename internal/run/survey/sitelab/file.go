// Package sitelab is a lab of sites with known answers (v6lab survey
// --lab-sites FILE): the sites a file lists, each a name in a DNS server
// of its own and served by one embedded HTTP and HTTPS server, with the
// properties the file gives it (no AAAA, IPv6 blackholed, an extra delay
// over one family, objects embedded from other sites, an answer that never
// ends, a redirect loop) and the verdict a survey should give it. It runs
// in a network namespace of its own (lab.SitesHere), on loopback, or in a
// kept lab's server host (Serve, v6lab lab up --sites), surveyed from its
// client host (ReexecInLab, v6lab survey --lab).
//
// It imports lab (the addresses and routes), proto (a self-signed
// certificate) and survey's name check.
package sitelab

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/report/sites"
	"v6lab/internal/run/survey"
)

// Site is one site of a lab of sites, as its line in the file says.
type Site struct {
	Line int
	Name string
	// NoAAAA: the site has an A record only. Blackhole6: its AAAA is an
	// address every packet to which is dropped.
	NoAAAA, Blackhole6 bool
	// Delay is the server's wait before each answer over IPv4 [0] and
	// IPv6 [1].
	Delay [2]time.Duration
	// Objects are the other sites whose objects its page embeds.
	Objects []string
	// Hang: the site accepts and never answers; Loop: its page redirects
	// in a loop; Literal: its page redirects to its address of the other
	// family, as a literal.
	Hang, Loop, Literal bool
	// Expect is the verdict a survey should give it ("": none said).
	Expect string
}

// Sites is a lab's sites in the file's order.
type Sites []Site

// Names lists the sites' names, one a line: a survey's list.
func (s Sites) Names() string {
	var b strings.Builder
	for _, x := range s {
		b.WriteString(x.Name + "\n")
	}
	return b.String()
}

// ByName finds a site.
func (s Sites) ByName(name string) (Site, bool) {
	for _, x := range s {
		if x.Name == name {
			return x, true
		}
	}
	return Site{}, false
}

// Load reads a sites file: one site a line, NAME then its properties
// (docs/survey.md); blank lines and # comments skipped. Every error names
// the file, the line and the property.
func Load(name string) (Sites, error) {
	f, err := survey.OpenRegular(name)
	if err != nil {
		return nil, fmt.Errorf("lab sites: %w", err)
	}
	defer f.Close()
	var out Sites
	seen := map[string]int{}
	var bad error
	err = survey.EachLine(f, func(n int, raw []byte) bool {
		if len(raw) > survey.MaxLine {
			bad = fmt.Errorf("lab sites: %s:%d: a line longer than %d bytes is not a site (NAME [PROPERTY...]; docs/survey.md)", name, n, survey.MaxLine)
			return false
		}
		line, _, _ := strings.Cut(string(raw), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return true
		}
		s, err := parseSite(n, fields)
		if err != nil {
			bad = fmt.Errorf("lab sites: %s:%d: %w", name, n, err)
			return false
		}
		if prev, ok := seen[s.Name]; ok {
			bad = fmt.Errorf("lab sites: %s:%d: %s is listed already at line %d", name, n, s.Name, prev)
			return false
		}
		seen[s.Name] = n
		out = append(out, s)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("lab sites: %s: %w", name, err)
	}
	if bad != nil {
		return nil, bad
	}
	return out, check(name, out)
}

// check refuses an empty lab, too many sites, and objects on sites the
// file does not list.
func check(name string, s Sites) error {
	switch {
	case len(s) == 0:
		return fmt.Errorf("lab sites: %s lists no site (NAME [PROPERTY...] a line; docs/survey.md)", name)
	case len(s) > lab.MaxSites:
		return fmt.Errorf("lab sites: %s lists %d sites (at most %d)", name, len(s), lab.MaxSites)
	}
	for _, x := range s {
		for i, o := range x.Objects {
			if _, ok := s.ByName(o); !ok {
				return fmt.Errorf("lab sites: %s:%d: objects: %s is not a site of the file", name, x.Line, o)
			}
			if slices.Contains(x.Objects[:i], o) {
				return fmt.Errorf("lab sites: %s:%d: objects: %s is listed twice", name, x.Line, o)
			}
		}
	}
	if cycle := s.cycle(); cycle != nil {
		x, _ := s.ByName(cycle[0])
		return fmt.Errorf("lab sites: %s:%d: objects: a cycle: %s (a site's objects may not lead back to it)", name, x.Line, strings.Join(cycle, " → "))
	}
	return nil
}

// cycle is a chain of objects that leads from a site back to it (the
// first found, in the file's order), nil when there is none: a
// depth-first walk that visits each site once.
func (s Sites) cycle() []string {
	const onPath, done = 1, 2
	state := map[string]int{}
	var path []string
	var walk func(name string) []string
	walk = func(name string) []string {
		switch state[name] {
		case onPath:
			return append(slices.Clone(path[slices.Index(path, name):]), name)
		case done:
			return nil
		}
		state[name] = onPath
		path = append(path, name)
		x, _ := s.ByName(name)
		for _, o := range x.Objects {
			if c := walk(o); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[name] = done
		return nil
	}
	for _, x := range s {
		if c := walk(x.Name); c != nil {
			return c
		}
	}
	return nil
}

// parseSite reads one line's fields.
func parseSite(n int, fields []string) (Site, error) {
	s := Site{Line: n, Name: strings.ToLower(fields[0])}
	if err := survey.CheckName(s.Name); err != nil {
		return s, err
	}
	given := map[string]string{}
	for _, p := range fields[1:] {
		key, _, _ := strings.Cut(p, "=")
		if prev, ok := given[key]; ok {
			return s, fmt.Errorf("%s: given twice (%s and %s): give it once", key, prev, p)
		}
		given[key] = p
		if err := s.set(p); err != nil {
			return s, err
		}
	}
	if n := btoi(s.Hang) + btoi(s.Loop) + btoi(s.Literal); n > 1 {
		return s, fmt.Errorf("hang, redirect-loop and redirect-literal: give one")
	}
	return s, s.contradiction()
}

// contradiction refuses properties that cannot hold together: a site
// without AAAA has no IPv6 address to blackhole, nor (unless it redirects
// to its IPv6 literal) to delay; a blackholed one's IPv6 answers nothing
// to delay.
func (s *Site) contradiction() error {
	switch {
	case s.NoAAAA && s.Blackhole6:
		return fmt.Errorf("blackhole6: the site has no AAAA (no-aaaa), so no client goes to its IPv6 address: give one of no-aaaa and blackhole6")
	case s.NoAAAA && s.Delay[1] > 0 && !s.Literal:
		return fmt.Errorf("delay6: the site has no AAAA (no-aaaa), so nothing reaches it over IPv6 to delay")
	case s.Blackhole6 && s.Delay[1] > 0:
		return fmt.Errorf("delay6: the site's IPv6 address is blackholed (blackhole6): it never answers, late or not")
	}
	return s.expectContradiction()
}

// expectContradiction refuses an expect= the lookups alone contradict: a
// site without AAAA is judged no_aaaa whatever else it does, one with
// AAAA never is, and every lab site has an A record.
func (s *Site) expectContradiction() error {
	v := sites.Verdict(s.Expect)
	switch {
	case s.Expect == "":
		return nil
	case s.NoAAAA && v != sites.NoAAAA:
		return fmt.Errorf("expect: the site has no AAAA (no-aaaa), so a survey judges it %s, never %s", sites.NoAAAA, v)
	case !s.NoAAAA && v == sites.NoAAAA:
		return fmt.Errorf("expect: %s is the verdict of a site without AAAA: give the site no-aaaa", v)
	case v == sites.IPv6Only || v == sites.NoAddress:
		return fmt.Errorf("expect: every lab site has an A record, so a survey never judges one %s", v)
	}
	return nil
}

// set reads one property.
func (s *Site) set(p string) error {
	key, val, hasVal := strings.Cut(p, "=")
	flags := map[string]*bool{"no-aaaa": &s.NoAAAA, "blackhole6": &s.Blackhole6, "hang": &s.Hang, "redirect-loop": &s.Loop, "redirect-literal": &s.Literal}
	if b, ok := flags[key]; ok {
		if hasVal {
			return fmt.Errorf("%s takes no value", key)
		}
		*b = true
		return nil
	}
	if !hasVal || val == "" {
		return fmt.Errorf("%q is not a property: want no-aaaa, blackhole6, hang, redirect-loop, redirect-literal, delay4=D, delay6=D, objects=NAME,... or expect=VERDICT", p)
	}
	switch key {
	case "delay4", "delay6":
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 || d > time.Minute {
			return fmt.Errorf("%s: %q is not a delay from 0 to 1m (such as 30ms)", key, val)
		}
		s.Delay[map[string]int{"delay4": 0, "delay6": 1}[key]] = d
	case "objects":
		for _, o := range strings.Split(val, ",") {
			if err := survey.CheckName(o); err != nil {
				return fmt.Errorf("objects: %w", err)
			}
			s.Objects = append(s.Objects, strings.ToLower(o))
		}
	case "expect":
		if !slices.Contains(sites.Verdicts, sites.Verdict(val)) {
			return fmt.Errorf("expect: %q is not a verdict: want one of %v", val, sites.Verdicts)
		}
		s.Expect = val
	default:
		return fmt.Errorf("%q is not a property: want no-aaaa, blackhole6, hang, redirect-loop, redirect-literal, delay4=D, delay6=D, objects=NAME,... or expect=VERDICT", p)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
