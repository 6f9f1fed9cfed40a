package lab

import (
	"reflect"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// TestEveryLabFlagIsGiven: each lab flag but --name, given alone, is what
// Given says (as typed) and sets one override, so a run where no lab is
// built refuses it (trial10 T3: --loss, --rate, --delay, … were taken
// silently on loopback and against real hosts); --name alone is none.
func TestEveryLabFlagIsGiven(t *testing.T) {
	values := map[string]string{"tunnel-mtu": "1280", "tunnel": "sit", "rate": "10M", "queue-limit": "64K",
		"delay": "10ms", "jitter": "1ms", "loss": "3", "congestion": "reno", "bare-server": "", "ptb-blackhole": "ipv6",
		"fragments": "drop", "tcp-mtu-probing": "1", "mss-clamp": ""}
	var names []string
	probe := pflag.NewFlagSet("x", pflag.ContinueOnError)
	(&Flags{}).Register(probe, true)
	probe.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	for _, name := range names {
		if name == "name" {
			continue
		}
		v, ok := values[name]
		if !ok {
			t.Errorf("--%s: no value in this test: add one", name)
			continue
		}
		arg, want := "--"+name, "--"+name
		if v != "" {
			arg, want = arg+"="+v, want+" "+v
		}
		var f Flags
		fl := pflag.NewFlagSet("x", pflag.ContinueOnError)
		f.Register(fl, true)
		if err := fl.Parse([]string{arg, "--name", "n1"}); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		if got := f.Given(); !slices.Equal(got, []string{want}) {
			t.Errorf("%s: Given %q, want [%q]", arg, got, want)
		}
		o, set := reflect.ValueOf(f.Overrides()), 0
		for i := range o.NumField() {
			if !o.Field(i).IsNil() {
				set++
			}
		}
		if set != 2 { // the flag's and --name's
			t.Errorf("%s --name n1: %d overrides set, want 2: %+v", arg, set, f.Overrides())
		}
	}
	var f Flags
	fl := pflag.NewFlagSet("x", pflag.ContinueOnError)
	f.Register(fl, true)
	if err := fl.Parse([]string{"--name", "n1", "--mss-clamp=false"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Given(); !slices.Equal(got, []string{"--mss-clamp=false"}) {
		t.Errorf("--name n1 --mss-clamp=false: Given %q, want [--mss-clamp=false]", got)
	}
}
