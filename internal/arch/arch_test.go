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
	"v6lab/internal/path":            {},
	"v6lab/internal/result":          {},
	"v6lab/internal/host":            {},
	"v6lab/internal/stats":           {},
	"v6lab/internal/report":          {"result", "stats", "path"},
	"v6lab/internal/load":            {"path", "result"},
	"v6lab/internal/evloop":          {},
	"v6lab/internal/content":         {},
	"v6lab/internal/proto/http":      {"load", "path", "result", "units", "evloop", "content"},
	"v6lab/internal/proto/dns":       {"load", "path", "result"},
	"v6lab/internal/proto/ftp":       {"load", "path", "result", "units", "proto/reply", "proto/guard", "content"},
	"v6lab/internal/proto/smtp":      {"load", "path", "result", "proto/reply", "proto/guard"},
	"v6lab/internal/proto/reply":     {},
	"v6lab/internal/proto/guard":     {},
	"v6lab/internal/proto/imap":      {"load", "path", "result", "proto/reply", "proto/guard"},
	"v6lab/internal/proto/extclient": {"load", "path", "result"},
	"v6lab/internal/experiment":      {"load", "path", "result", "proto/http", "proto/dns", "lab", "lab/sixin4", "lab/bpf", "units", "specfile", "transport", "proto/ftp", "proto/reply", "proto/smtp", "proto/imap", "proto/extclient", "proto/guard", "traffic", "evloop", "content"},
	"v6lab/internal/lab":             {"lab/sixin4", "lab/bpf", "specfile", "units", "path"},
	"v6lab/internal/lab/sixin4":      {},
	"v6lab/internal/lab/bpf":         {},
	"v6lab/internal/capture":         {"path", "result"},
	"v6lab/internal/units":           {},
	"v6lab/internal/transport":       {"load", "path", "result"},
	"v6lab/internal/specfile":        {},
	"v6lab/internal/traffic":         {"path"},
	"v6lab/internal/tcpflow":         {},
	"v6lab/internal/congestion":      {"lab", "lab/sixin4", "lab/bpf", "specfile", "units", "traffic", "path", "result"},
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
