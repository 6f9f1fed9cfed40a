package report

import (
	"strings"
	"testing"
)

// TestEyeballsSectionSetsDualBesidePinned: a dual cell's share of IPv6
// wins, attempts and connect time, and its mean against the same group's
// pinned ipv4 and ipv6 cells, with a note on v6lab's own share at 10
// connections and more when the dual path raced on goroutines (not on the
// event loop); no dual cell, no section.
func TestEyeballsSectionSetsDualBesidePinned(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	cells := []Cell{
		{Protocol: "http", Path: "ipv4", Conns: 10, MeanMS: ms(2.0)},
		{Protocol: "http", Path: "ipv6", Conns: 10, MeanMS: ms(2.5)},
		{Protocol: "http", Path: "dual", Conns: 10, MeanMS: ms(3.0), Metrics: map[string]*MetricStat{
			"ipv6_won": stat(0.75), "he_attempts": stat(1.25), "he_winner_start_ms": stat(0.25), "he_connect_ms": stat(0.5)}, Winners: map[string]int{"ipv6/tcp": 15, "ipv4/tcp": 5}},
	}
	sec, ok := EyeballsSection("HTTP", cells, "go-dial", "")
	if !ok || len(sec.Rows) != 1 {
		t.Fatalf("%v %+v", ok, sec)
	}
	if got := strings.Join(sec.Rows[0], "|"); got != "dual|10|75%|25%|1.25|0.250|0.500|3.00|+1|+0.5|ipv6/tcp 75% (53.13–88.81%), ipv4/tcp 25% (11.19–46.87%)" {
		t.Errorf("row %s", got)
	}
	if len(sec.Footer) != 2 || sec.Footer[1] != EyeballsLoadNote {
		t.Errorf("at 10 connections, footer %q", sec.Footer)
	}
	for engine, note := range map[string]bool{"": true, "ipv4=evloop dual=go-dial": true, "evloop": false, "ipv4=go dual=evloop": false} {
		if sec, _ := EyeballsSection("HTTP", cells, engine, ""); (len(sec.Footer) == 2) != note {
			t.Errorf("engine %q: footer %q", engine, sec.Footer)
		}
	}
	for i := range cells {
		cells[i].Conns = 1
	}
	if sec, _ := EyeballsSection("HTTP", cells, "go-dial", ""); len(sec.Footer) != 1 {
		t.Errorf("at one connection, footer %q", sec.Footer)
	}
	// Raced by Go's dialer, the note says Go's resolver is in the cost.
	if sec, _ := EyeballsSection("HTTP", cells, "go-dial", "go"); len(sec.Footer) != 2 || sec.Footer[1] != EyeballsGoDialerNote {
		t.Errorf("dialer go: footer %q", sec.Footer)
	}
	if _, ok := EyeballsSection("HTTP", cells[:2], "", "go"); ok {
		t.Error("a section without a dual cell")
	}
}
