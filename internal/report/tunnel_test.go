package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportsSayWhichTunnel: report.txt and report.html name the 6in4
// tunnel, and warn when it was the userspace one.
func TestReportsSayWhichTunnel(t *testing.T) {
	for impl, want := range map[string]string{
		"sit":       "6in4 tunnel: sit (the kernel's device)",
		"bpf":       "6in4 tunnel: bpf (v6lab's tc BPF programs in the kernel datapath, attached by tcx)",
		"userspace": "WARNING: the 6in4 figures include the cost of v6lab's userspace tunnel",
	} {
		s := &Summary{Name: "quick", Baseline: "ipv4", Target: "lab", Lab: map[string]string{"tunnel": impl, "tunnel_hook": "tcx"}, Cells: sixIn4Cell}
		var txt, html bytes.Buffer
		if err := Text(&txt, s); err != nil {
			t.Fatal(err)
		}
		if err := HTML(&html, s); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(txt.String(), want) {
			t.Errorf("%s: report.txt lacks %q:\n%s", impl, want, txt.String())
		}
		if !strings.Contains(html.String(), strings.ReplaceAll(want, "'", "&#39;")) {
			t.Errorf("%s: report.html lacks %q", impl, want)
		}
	}
	// The tunnel's MTU, the one condition that changes the 6in4 path
	// (trial8 F7).
	var mtu bytes.Buffer
	Text(&mtu, &Summary{Name: "mtu", Baseline: "ipv4", Target: "lab", Lab: map[string]string{"tunnel": "bpf", "tunnel_mtu": "1280"}, Cells: sixIn4Cell})
	if !strings.Contains(mtu.String(), "6in4 tunnel: bpf, MTU 1280 (v6lab's tc BPF programs") {
		t.Errorf("report.txt does not say the tunnel's MTU:\n%s", mtu.String())
	}
	var txt bytes.Buffer
	Text(&txt, &Summary{Name: "loopback"})
	if strings.Contains(txt.String(), "tunnel") {
		t.Errorf("a run without a lab names a tunnel:\n%s", txt.String())
	}
	// A lab run over ipv4 and ipv6 alone: the lab built its tunnel, but
	// no figure went through it (trial13).
	txt.Reset()
	Text(&txt, &Summary{Name: "quick", Baseline: "ipv4", Target: "lab", Lab: map[string]string{"tunnel": "bpf"},
		Cells: []Cell{{Protocol: "http", Path: "ipv4", Conns: 1}, {Protocol: "http", Path: "ipv6", Conns: 1}}})
	if strings.Contains(txt.String(), "6in4 tunnel") {
		t.Errorf("a run with no 6in4 cell names the tunnel:\n%s", txt.String())
	}
}

// sixIn4Cell is a summary's cells with one over 6in4.
var sixIn4Cell = []Cell{{Protocol: "http", Path: "6in4", Conns: 1}}

// TestReportTxtHasAHeader: report.txt says what ran where: tool, host,
// kernel, date, tunnel, congestion control, links and how they are
// shaped, bare server, servers.
func TestReportTxtHasAHeader(t *testing.T) {
	s := &Summary{Name: "quick", Baseline: "ipv4", Target: "lab", Created: t0,
		Machine: map[string]string{"tool": "v6lab v1", "host": "h", "kernel": "6.18.0", "cpus": "2"},
		Lab:     map[string]string{"tunnel": "bpf", "tunnel_hook": "tcx", "congestion": "cubic", "links": "client-r1 unshaped, mtu 1500", "server_tcp": "bare: SACK off", "shaping": "tc tbf at the link rate"},
		Servers: map[string]string{"http": "embedded (Go net/http)"}, Cells: sixIn4Cell}
	var b bytes.Buffer
	Text(&b, s)
	for _, want := range []string{"v6lab v1 on h (kernel 6.18.0, 2 CPUs), 2026-11-22 12:00 UTC", "6in4 tunnel: bpf", "TCP congestion control in the lab: cubic",
		"links: client-r1 unshaped, mtu 1500", "shaped links: tc tbf at the link rate", "server host: bare: SACK off", "server http: embedded (Go net/http)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.txt lacks %q:\n%s", want, b.String())
		}
	}
}

// TestTheScaleIsRecordedAndSaid: a scaled experiment says so in
// summary.json and report.txt.
func TestTheScaleIsRecordedAndSaid(t *testing.T) {
	f := build(baseMS, otherMS)
	f.Header.Spec = map[string]any{"name": "golden", "scale": 0.05}
	s := Summarize(f)
	if s.Scale != 0.05 {
		t.Fatalf("scale %v", s.Scale)
	}
	var b bytes.Buffer
	Text(&b, s)
	if !strings.Contains(b.String(), "scaled by 0.05 (--scale)") {
		t.Errorf("report.txt:\n%s", b.String())
	}
	f.Header.Spec = map[string]any{"name": "golden"}
	if s := Summarize(f); s.Scale != 0 {
		t.Errorf("an unscaled run says scale %v", s.Scale)
	}
}

// TestTheEngineIsSaid: each cell group's connection engine, recorded in
// the spec's params, is in summary.json and both reports.
func TestTheEngineIsSaid(t *testing.T) {
	f := build(baseMS, otherMS)
	f.Header.Spec = map[string]any{"name": "golden", "cells": []any{
		map[string]any{"protocol": "http", "params": map[string]any{"engine": "go-dial"}},
		map[string]any{"protocol": "http", "label": "files", "params": map[string]any{"engine": "evloop"}},
		map[string]any{"protocol": "dns"},
	}}
	s := Summarize(f)
	if len(s.Engines) != 2 || s.Engines["http"] != "go-dial" || s.Engines["files"] != "evloop" {
		t.Fatalf("engines %v", s.Engines)
	}
	var txt, html bytes.Buffer
	Text(&txt, s)
	if !strings.Contains(txt.String(), "connection engine: files evloop, http go-dial") {
		t.Errorf("report.txt:\n%s", txt.String())
	}
	if err := HTML(&html, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "engine: http") || !strings.Contains(html.String(), "go-dial") {
		t.Error("report.html does not name the engine")
	}
}
