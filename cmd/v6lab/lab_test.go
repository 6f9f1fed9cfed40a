package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/lab"
)

// buildBinary builds v6lab once for tests that need a real process.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "v6lab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestLabUpStatusDown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lab needs root (CI runs as root)")
	}
	bin := buildBinary(t)
	name := fmt.Sprintf("c%d", os.Getpid()%100000)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { run("lab", "down", "--name", name) })
	out, err := run("lab", "up", "--name", name, "--tunnel-mtu", "1280", "--rate", "100M")
	if err != nil || !strings.Contains(out, "is up (tunnel ") {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	if out, err := run("lab", "up", "--name", name); err == nil || !strings.Contains(out, "is already up") {
		t.Errorf("second lab up: %v\n%s", err, out)
	}
	out, err = run("lab", "status", "--name", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kept by process", "192.0.2.2/24", "2001:db8:6:3::2/64", "2001:db8:46:3::2/64", "tun6in4", "mtu 1280", "route 2001:db8:46:3::/64 dev tun6in4", "qdisc tbf 100.0 Mbit/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if out, err := run("lab", "down", "--name", name); err != nil || !strings.Contains(out, "is down") {
		t.Fatalf("lab down: %v\n%s", err, out)
	}
	if left, _ := lab.Namespaces(lab.Prefix + name + "-"); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if pid := lab.Owner(name); pid != 0 {
		t.Errorf("owner process %d still alive", pid)
	}
}

func TestLabCommandsExplainBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"lab", "up", "--name", "Bad Name"}, `bad lab name "Bad Name"`},
		{[]string{"lab", "up", "--tunnel-mtu", "9000"}, "tunnel MTU 9000 out of range"},
		{[]string{"lab", "up", "--tunnel", "gre"}, `unknown tunnel implementation "gre"`},
		{[]string{"lab", "status", "--name", "nosuchlab"}, `no lab named "nosuchlab"`},
		{[]string{"lab", "up", "--rate", "fast"}, `--rate: lab: bad rate "fast"`},
		{[]string{"lab", "up", "--jitter", "1ms"}, "jitter needs a delay"},
	}
	for _, c := range cases {
		_, err := v6lab(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
