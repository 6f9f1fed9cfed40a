package run

import (
	"errors"
	"strings"
	"testing"

	"v6lab/internal/lab"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
)

// loopbackExp is a where: loopback experiment of one HTTP cell.
func loopbackExp(t *testing.T) *experiment.Experiment {
	t.Helper()
	exp, err := experiment.Parse("lb.yaml", []byte("name: lb\nwhere: loopback\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// TestLabFlagsAreRefusedWhereNoLabIsBuilt: the lab flags the user gave,
// and a topology's path MTU settings, are refused where no lab is built,
// naming them (trial10 T3); the same experiment without them runs there.
func TestLabFlagsAreRefusedWhereNoLabIsBuilt(t *testing.T) {
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{LabFlags: []string{"--loss 3"}}, "--loss 3 sets the lab, but this experiment runs on loopback: no lab is built, and the run would measure as if it had not been given"},
		{Settings{Loopback: true, LabFlags: []string{"--rate 10M", "--delay 10ms"}}, "--rate 10M and --delay 10ms set the lab, but --loopback: no lab is built, and the run would measure as if they had not been given"},
		{Settings{Lab: lab.Config{PMTU: lab.PMTU{MSSClamp: true}}}, "the topology's path MTU settings (pmtu: mss_clamp) set the lab's routers and hosts, but this experiment runs on loopback"},
	} {
		_, _, err := Decide(loopbackExp(t), tc.s)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
	if where, _, err := Decide(loopbackExp(t), Settings{}); err != nil || where != Loopback {
		t.Errorf("no lab flags: %s, %v; want loopback", where, err)
	}
	// A run that meant to build a lab of its own in a user namespace and
	// cannot falls back to loopback only when nothing asked for a lab.
	exp := loopbackExp(t)
	exp.Where = result.Auto
	noNS := errors.New("no user namespaces")
	if _, _, err := NoUserNamespace(exp, Settings{LabFlags: []string{"--loss 3"}}, noNS); err == nil || !strings.Contains(err.Error(), "this needs a lab") {
		t.Errorf("--loss 3 with no user namespace: %v, want refused", err)
	}
	if where, _, err := NoUserNamespace(exp, Settings{}, noNS); err != nil || where != Loopback {
		t.Errorf("no lab flags, no user namespace: %s, %v; want loopback", where, err)
	}
}

// TestCongestionKeyIsRefusedWhereNoLabIsBuilt: an experiment file's
// congestion key sets the lab's hosts alone (on loopback the run uses this
// host's own), so a run of an auto file that builds no lab (--loopback, no
// user namespace) refuses it as it refuses --congestion, naming the file,
// line and key; the same file runs there without it.
func TestCongestionKeyIsRefusedWhereNoLabIsBuilt(t *testing.T) {
	parse := func(congestion string) *experiment.Experiment {
		exp, err := experiment.Parse("cc.yaml", []byte("name: cc\n"+congestion+"paths: [ipv4, ipv6]\ncells:\n  - {protocol: http, conns: [1]}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return exp
	}
	want := "cc.yaml:2: congestion: reno sets the TCP congestion control of the lab's hosts, but --loopback: no lab is built"
	if _, _, err := Decide(parse("congestion: reno\n"), Settings{Loopback: true}); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("--loopback: %v, want %q…", err, want)
	}
	noNS := errors.New("no user namespaces")
	if _, _, err := NoUserNamespace(parse("congestion: reno\n"), Settings{}, noNS); err == nil || !strings.HasPrefix(err.Error(), "cc.yaml:2: congestion: reno sets") || !strings.Contains(err.Error(), "no user namespaces") {
		t.Errorf("no user namespace: %v, want the key refused", err)
	}
	if where, _, err := Decide(parse(""), Settings{Loopback: true}); err != nil || where != Loopback {
		t.Errorf("no congestion key: %s, %v; want loopback", where, err)
	}
}
