package arch

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// allowed lists, per package, the internal packages it may import
// (directly or not). A package missing here may import nothing internal.
var allowed = map[string][]string{
	"v6lab/internal/path":            {"kstamp", "synstamp", "sockaddr"},
	"v6lab/internal/synstamp":        {},
	"v6lab/internal/kstamp":          {},
	"v6lab/internal/sockaddr":        {},
	"v6lab/internal/result":          {},
	"v6lab/internal/host":            {},
	"v6lab/internal/stats":           {},
	"v6lab/internal/report":          {"result", "stats", "path", "synstamp"},
	"v6lab/internal/load":            {"path", "synstamp", "result"},
	"v6lab/internal/evloop":          {"kstamp", "sockaddr"},
	"v6lab/internal/wakeread":        {},
	"v6lab/internal/content":         {},
	"v6lab/internal/proto":           protoBase,
	"v6lab/internal/proto/http":      append(protoLevel(), "evloop", "wakeread", "eyeballs", "proto/extclient", "proto/converse"),
	"v6lab/internal/eyeballs":        {},
	"v6lab/internal/proto/dns":       append(protoLevel(), "evloop"),
	"v6lab/internal/proto/ftp":       append(protoLevel(), "proto/reply", "proto/guard", "proto/extclient", "wakeread"),
	"v6lab/internal/proto/smtp":      append(protoLevel(), "proto/reply", "proto/guard", "wakeread", "evloop", "proto/converse"),
	"v6lab/internal/proto/converse":  {"evloop", "kstamp", "load", "path", "synstamp", "result"},
	"v6lab/internal/proto/reply":     {},
	"v6lab/internal/proto/guard":     {},
	"v6lab/internal/proto/imap":      append(protoLevel(), "proto/reply", "proto/guard", "wakeread", "evloop", "proto/converse"),
	"v6lab/internal/proto/extclient": protoLevel(),
	"v6lab/internal/proto/trial":     protoLevel(),
	"v6lab/internal/proto/all":       append(protoLevel(), "evloop", "wakeread", "eyeballs", "proto/extclient", "proto/reply", "proto/guard", "proto/converse", "proto/http", "proto/dns", "proto/ftp", "proto/smtp", "proto/imap", "proto/trial"),
	"v6lab/internal/experiment": append(protoLevel(), "evloop", "wakeread", "eyeballs", "proto/extclient", "proto/reply", "proto/guard", "proto/converse", "proto/http", "proto/dns", "proto/ftp", "proto/smtp", "proto/imap", "proto/trial", "proto/all",
		"lab", "lab/sixin4", "lab/bpf", "specfile", "traffic", "congestion"),
	// measure runs a job; labrun a lab run (measure in its child);
	// runner decides where and calls either: each above the one before,
	// none imports the CLI.
	"v6lab/internal/measure":    experimentDeps("capture", "pktring", "host", "report", "stats"),
	"v6lab/internal/labrun":     experimentDeps("capture", "pktring", "host", "report", "stats", "measure", "servers", "tcpflow"),
	"v6lab/internal/runner":     experimentDeps("capture", "pktring", "host", "report", "stats", "measure", "servers", "tcpflow", "labrun"),
	"v6lab/internal/labkeep":    {"lab", "lab/sixin4", "lab/bpf", "specfile", "units", "path", "synstamp"},
	"v6lab/internal/lab":        {"lab/sixin4", "lab/bpf", "specfile", "units", "path", "synstamp"},
	"v6lab/internal/lab/sixin4": {},
	"v6lab/internal/lab/bpf":    {},
	"v6lab/internal/capture":    {"path", "synstamp", "result", "pktring"},
	"v6lab/internal/pktring":    {},
	"v6lab/internal/units":      {},
	"v6lab/internal/transport":  {"load", "path", "synstamp", "result"},
	"v6lab/internal/specfile":   {},
	"v6lab/internal/traffic":    {"path", "synstamp"},
	"v6lab/internal/tcpflow":    {},
	"v6lab/internal/congestion": {"lab", "lab/sixin4", "lab/bpf", "specfile", "units", "traffic", "path", "synstamp", "result"},
	// merge joins segments' result directories: files and reports only.
	"v6lab/internal/merge": {"result", "report", "stats", "path", "synstamp", "kstamp"},
}

// protoBase is what the protocol interface may build on: the layers below
// every protocol.
var protoBase = []string{"load", "path", "synstamp", "result", "transport", "content", "units"}

// protoLevel is what a protocol package may import: protoBase and proto.
func protoLevel() []string { return append(append([]string(nil), protoBase...), "proto") }

// experimentDeps is what experiment may import, and more.
func experimentDeps(more ...string) []string {
	return append(append(protoLevel(), "evloop", "wakeread", "eyeballs", "proto/extclient", "proto/reply", "proto/guard", "proto/converse", "proto/http", "proto/dns", "proto/ftp",
		"proto/smtp", "proto/imap", "proto/trial", "proto/all", "lab", "lab/sixin4", "lab/bpf", "specfile", "traffic", "congestion", "experiment"), more...)
}

// TestOnlyTheListImportsProtocols: outside internal/proto, a protocol
// package is reached through proto/all, so adding one is its package and
// a line in the list.
func TestOnlyTheListImportsProtocols(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "v6lab/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list listed %d packages", len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if strings.HasPrefix(f[0], "v6lab/internal/proto") {
			continue
		}
		for _, imp := range f[1:] {
			if rest, ok := strings.CutPrefix(imp, "v6lab/internal/proto/"); ok && rest != "all" {
				t.Errorf("%s imports %s: protocols are found in proto/all", f[0], imp)
			}
		}
	}
}

func TestDependenciesPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "v6lab/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		ok, known := allowed[p.ImportPath]
		if !known {
			continue
		}
		seen++
		may := map[string]bool{}
		for _, a := range ok {
			may["v6lab/internal/"+a] = true
		}
		// The kernel's timestamps and socket addresses are part of the
		// sockets path and evloop make: whatever may import them may
		// import kstamp and sockaddr.
		if may["v6lab/internal/path"] || may["v6lab/internal/evloop"] {
			may["v6lab/internal/kstamp"] = true
			may["v6lab/internal/sockaddr"] = true
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, "v6lab/") && !may[d] {
				t.Errorf("%s imports %s, which is not below it", p.ImportPath, d)
			}
		}
	}
	if seen != len(allowed) {
		t.Errorf("found %d of the %d packages listed", seen, len(allowed))
	}
}
