package load

import (
	"testing"
	"time"
)

// TestWireEndsAfterARetransmission: a read that completed a reply long
// after its bytes' stamp, on a connection that received a segment out of
// order, ends the wire at the read: the stamp is an early segment's, from
// before the retransmission it waited for. A read soon after its stamp,
// or a late one with nothing out of order (a busy client), keeps the stamp.
func TestWireEndsAfterARetransmission(t *testing.T) {
	base := time.Now()
	for _, c := range []struct {
		name      string
		read      time.Duration
		reordered bool
		want      time.Duration
	}{
		{"late, out of order", 201 * time.Millisecond, true, 201 * time.Millisecond},
		{"late, in order", 201 * time.Millisecond, false, time.Millisecond},
		{"soon, out of order", time.Millisecond + 50*time.Microsecond, true, time.Millisecond},
	} {
		tr := &Trace{firstTx: base, lastRx: base.Add(time.Millisecond), lastRead: base.Add(c.read), reordered: c.reordered}
		if got := time.Duration(tr.wire()); got != c.want {
			t.Errorf("%s: wire %v, want %v", c.name, got, c.want)
		}
	}
}
