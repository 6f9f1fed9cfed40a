package evloop

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestTCPInfo: an exchange asked for its connection's TCP_INFO has it
// when it completes; a failed one has it unasked (a stall is told by
// it), a connection that came up and then went quiet.
func TestTCPInfo(t *testing.T) {
	e := engine(t)
	srv := server(t, "tcp4", "127.0.0.1:0", func(string) string { return strings.Repeat("x", 100000) })
	for _, asked := range []bool{false, true} {
		r := e.Do(context.Background(), &Exchange{Remote: srv, Request: []byte("GET\n"), Reply: &untilEOF{}, TCPInfo: asked})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		switch {
		case !asked && r.TCP != nil:
			t.Errorf("TCP_INFO nobody asked for: %+v", r.TCP)
		case asked && (r.TCP == nil || r.TCP.MSS <= 0 || r.TCP.RcvMSS <= 0 || !r.TCP.Established || r.TCP.BytesIn < 100000):
			t.Errorf("TCP_INFO of a completed exchange: %+v", r.TCP)
		}
	}
	held, arrived, release := heldServer(t)
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	go func() { <-arrived }()
	r := e.Do(ctx, &Exchange{Remote: held, Request: []byte("GET\n"), Reply: &untilEOF{}})
	if !errors.Is(r.Err, ErrTimeout) || r.TCP == nil || !r.TCP.Established || !r.TCP.Stalled() {
		t.Errorf("a held connection: %v, TCP_INFO %+v", r.Err, r.TCP)
	}
}

// TestUDPResend: a UDP request whose reply does not come is sent again
// after Resend, the wait doubled, and counted; a reply that came whole
// has no fragment size (the lab's tests see fragments: docs/lab.md).
func TestUDPResend(t *testing.T) {
	e := engine(t)
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 64)
		for seen := 1; ; seen++ {
			n, from, err := pc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if string(buf[:n]) == "now" || seen%3 == 0 { // "late": the third copy
				pc.WriteToUDP([]byte("r"), from)
			}
		}
	}()
	to := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	r := e.Do(ctx, &Exchange{Remote: to, Request: []byte("late"), Reply: &upTo{1}, UDP: true, Resend: 50 * time.Millisecond, FragSize: true})
	if r.Err != nil || r.Resent != 2 || time.Since(start) < 150*time.Millisecond || r.BytesOut != 12 || r.FragSize != 0 {
		t.Errorf("resent %d times in %v (%d bytes out, fragments %d): %v; want twice, after 50 and 100 ms more", r.Resent, time.Since(start), r.BytesOut, r.FragSize, r.Err)
	}
	r = e.Do(ctx, &Exchange{Remote: to, Request: []byte("now"), Reply: &upTo{1}, UDP: true})
	if r.Err != nil || r.Resent != 0 {
		t.Errorf("without Resend: resent %d: %v", r.Resent, r.Err)
	}
}
