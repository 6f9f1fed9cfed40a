package arch

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers are internal/'s folders from the top down: a package may import
// packages of its own folder and of the folders below its own, never
// above (docs/ARCHITECTURE.md draws them). run/ measures; report/ turns
// samples into figures; proto/ the protocols; gen/ generates load and
// traffic; lab/ the lab and its datapaths; wire/ proves paths on the wire;
// sock/ family-pinned sockets; input/ and result/ are leaves.
var layers = []string{
	"internal/run",
	"internal/report",
	"internal/proto",
	"internal/gen",
	"internal/lab",
	"internal/wire",
	"internal/sock",
	"internal/input",
	"internal/result",
}

// top are the packages above every layer: the CLI, the benches' programs,
// the built-in experiments, the deployment's, this one (no code) and the
// helpers of tests (testutil), which no other package may import.
var top = []string{"cmd/", "bench/", "experiments", "deploy/", "internal/arch", "internal/testutil"}

// only narrows what a package (or a folder and all in it, with a trailing
// /) may import
// of v6lab, beyond the layers: nothing but these (and what these import).
var only = map[string][]string{
	// Leaves: the lab's datapaths are pure programs; the kernel's stamps,
	// socket addresses, the packet ring and TCP flows are system calls and
	// bytes; statistics are math.
	"internal/lab/bpf/":      {},
	"internal/lab/sixin4/":   {},
	"internal/sock/kstamp":   {},
	"internal/sock/lag":      {},
	"internal/sock/sockaddr": {},
	"internal/sock/synstamp": {},
	"internal/sock/wakeread": {},
	"internal/sock/tcpinfo":  {},
	"internal/sock/eyeballs": {},
	"internal/sock/resend":   {},
	"internal/wire/pktring":  {},
	"internal/wire/tcpflow":  {},
	"internal/gen/content":   {},
	"internal/report/stats":  {},
	"internal/proto/reply":   {},
	"internal/proto/guard":   {},
	"internal/input/":        {},
	"internal/result":        {},
	"internal/run/host":      {},
	// path pins sockets with the kernel's stamps; evloop runs them (and
	// finds its connections' SYN stamps); both count how long replies
	// waited for their reads (lag), and send a lost query again by one
	// rule (resend).
	"internal/sock/path":   {"internal/sock/kstamp", "internal/sock/synstamp", "internal/sock/sockaddr", "internal/sock/lag", "internal/sock/resend"},
	"internal/sock/evloop": {"internal/sock/kstamp", "internal/sock/synstamp", "internal/sock/sockaddr", "internal/sock/tcpinfo", "internal/sock/lag", "internal/sock/resend"},
	// Reports read results and never what measures.
	"internal/report": {"internal/result", "internal/report/stats", "internal/report/whatif", "internal/sock/path"},
	// merge joins result directories: files and reports only.
	"internal/run/merge": {"internal/result", "internal/report", "internal/report/stats", "internal/report/whatif", "internal/sock/path"},
	// The protocol interface builds on what every protocol may use.
	"internal/proto": {"internal/gen/load", "internal/gen/transport", "internal/gen/content", "internal/sock/path", "internal/result", "internal/input/units", "internal/input/specfile", "internal/lab/servers"},
}

// rel is a package's path inside the module.
func rel(pkg string) string { return strings.TrimPrefix(pkg, "v6lab/") }

// under reports whether pkg is prefix or inside it (prefix ending in /:
// inside only).
func under(pkg, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(pkg, prefix) || pkg == strings.TrimSuffix(prefix, "/")
	}
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// layer is pkg's index in layers; len(layers) for nothing (an error),
// -1 above them all.
func layer(pkg string) int {
	for _, t := range top {
		if under(pkg, strings.TrimSuffix(t, "/")) {
			return -1
		}
	}
	for i, l := range layers {
		if under(pkg, l) {
			return i
		}
	}
	return len(layers)
}

type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "v6lab/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 40 {
		t.Fatalf("go list listed %d packages", len(pkgs))
	}
	return pkgs
}

// TestDependenciesPointDown: every package of the module is in a layer,
// imports only its own folder and the folders below, and keeps to what
// only allows it.
func TestDependenciesPointDown(t *testing.T) {
	for _, p := range listPackages(t) {
		me := rel(p.ImportPath)
		l := layer(me)
		if l == len(layers) {
			t.Errorf("%s is in no layer: put it in one of internal/'s folders (docs/ARCHITECTURE.md)", me)
			continue
		}
		var narrow []string
		narrowed := false
		for key, allow := range only {
			if me == key || (strings.HasSuffix(key, "/") && under(me, key)) {
				narrow, narrowed = append(narrow, allow...), true
			}
		}
		for _, d := range p.Deps {
			if !strings.HasPrefix(d, "v6lab/") {
				continue
			}
			dep := rel(d)
			dl := layer(dep)
			switch {
			case dl < l || (dl == l && dl >= 0 && !sameFolder(me, dep)):
				t.Errorf("%s imports %s, which is not below it", me, dep)
			case narrowed && !allowedBy(dep, narrow):
				t.Errorf("%s imports %s: it may import only %v", me, dep, narrow)
			case under(dep, "internal/testutil") && !under(me, "internal/testutil"):
				t.Errorf("%s imports %s: test helpers are for tests", me, dep)
			}
		}
	}
}

// sameFolder: two packages of one layer are in one folder of it (run/x
// and run/y are; proto/x and run/y are not).
func sameFolder(a, b string) bool {
	for _, l := range layers {
		if under(a, l) && under(b, l) {
			return true
		}
	}
	return false
}

// allowedBy: dep is one of allow, or what those import (path's kstamp).
func allowedBy(dep string, allow []string) bool {
	if slices.Contains(allow, dep) {
		return true
	}
	// What an allowed package is built of comes with it: path brings the
	// kernel's stamps and socket addresses, load what the kernel knows of
	// a TCP connection.
	for pkg, parts := range map[string][]string{
		"internal/sock/path": {"internal/sock/kstamp", "internal/sock/synstamp", "internal/sock/sockaddr", "internal/sock/lag", "internal/sock/resend"},
		"internal/gen/load":  {"internal/sock/tcpinfo"},
	} {
		if slices.Contains(allow, pkg) && slices.Contains(parts, dep) {
			return true
		}
	}
	return false
}

// TestOnlyTheListImportsProtocols: a protocol package is reached through
// proto/all, so adding one is its package and a line in the list; no
// other package names one (a protocol's helpers, such as proto/reply,
// are not protocols: proto/all does not import them).
func TestOnlyTheListImportsProtocols(t *testing.T) {
	pkgs := listPackages(t)
	protocols := map[string]bool{}
	for _, p := range pkgs {
		if rel(p.ImportPath) == "internal/proto/all" {
			for _, imp := range p.Imports {
				if r := rel(imp); strings.HasPrefix(r, "internal/proto/") {
					protocols[r] = true
				}
			}
		}
	}
	if len(protocols) < 5 {
		t.Fatalf("proto/all imports %d protocols", len(protocols))
	}
	for _, p := range pkgs {
		me := rel(p.ImportPath)
		if me == "internal/proto/all" {
			continue
		}
		for _, imp := range p.Imports {
			if r := rel(imp); protocols[r] && !under(me, r) {
				t.Errorf("%s imports %s: protocols are found in proto/all", me, r)
			}
		}
	}
}

// TestFoldersAreFew: internal/ has at most 12 folders, so its tree shows
// the layers.
func TestFoldersAreFew(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		if r, ok := strings.CutPrefix(rel(p.ImportPath), "internal/"); ok {
			first, _, _ := strings.Cut(r, "/")
			seen[first] = true
		}
	}
	if len(seen) > 12 {
		t.Errorf("internal/ has %d folders: %v", len(seen), seen)
	}
}
