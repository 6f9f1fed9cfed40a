package trial

import (
	"strings"
	"testing"

	"v6lab/internal/gen/transport"
)

// TestTheTrialsCongestionIsNoted: a trial that asks for a congestion
// control says which in the result's notes (the host's default is
// noted beside it); one that asks for none adds nothing.
func TestTheTrialsCongestionIsNoted(t *testing.T) {
	o := &Trial{Test: &transport.Options{Test: "tcp", Congestion: "cubic"}}
	if n := o.Notes(nil); len(n) != 1 || !strings.Contains(n[0], "cubic") {
		t.Errorf("notes %q", n)
	}
	o.Test.Congestion = ""
	if n := o.Notes(nil); len(n) != 0 {
		t.Errorf("notes %q", n)
	}
}
