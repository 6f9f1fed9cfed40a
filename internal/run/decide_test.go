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
