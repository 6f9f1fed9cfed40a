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
		s := &Summary{Name: "quick", Baseline: "ipv4", Target: "lab", Lab: map[string]string{"tunnel": impl, "tunnel_hook": "tcx"}}
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
	var txt bytes.Buffer
	Text(&txt, &Summary{Name: "loopback"})
	if strings.Contains(txt.String(), "tunnel") {
		t.Errorf("a run without a lab names a tunnel:\n%s", txt.String())
	}
}
