package congestion

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"v6lab/internal/lab"
	"v6lab/internal/sock/path"
)

// bottleneckLab is the Towson shape: generators on both routers and a
// 100 Mbit/s r1-r2 link between them.
func bottleneckLab(t *testing.T) *lab.Lab {
	t.Helper()
	testutil.RequireRoot(t, "building a lab needs root")
	cfg := lab.Config{Name: fmt.Sprintf("c%d", os.Getpid()%100000), Generators: true, NoTunnel: true,
		Links: map[string]lab.Link{"r1-r2": {Shaping: lab.Shaping{Rate: 100e6}}}}
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		if left, _ := lab.Namespaces(lab.Prefix + l.Name + "-"); len(left) != 0 {
			t.Errorf("namespaces left: %v", left)
		}
	})
	return l
}

// download times fetching n bytes from the server host to the client
// host over IPv4, across the bottleneck.
func download(t *testing.T, l *lab.Lab, n int64) time.Duration {
	t.Helper()
	var ln net.Listener
	if err := lab.Do(lab.NS(l.Name, lab.Server), func() error {
		var err error
		ln, err = path.Listen(context.Background(), path.IPv4, netip.AddrPortFrom(l.Addr.ServerV4, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.CopyN(c, zeros{}, n)
	}()
	var conn net.Conn
	if err := lab.Do(lab.NS(l.Name, lab.Client), func() error {
		var err error
		conn, err = path.Dialer{Path: path.IPv4}.Dial(context.Background(), "tcp", ln.Addr().(*net.TCPAddr).AddrPort())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	got, err := io.Copy(io.Discard, conn)
	if err != nil || got != n {
		t.Fatalf("download: %d of %d bytes: %v", got, n, err)
	}
	return time.Since(start)
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// TestBackgroundLoadsTheBottleneck runs C4B (100 Mbit/s, 90% TCP toward the
// client side) over the 100 Mbit/s link: every flow goes between the right
// generator hosts and gets through, the run's record shows it, and a
// download across the same link slows down for it.
func TestBackgroundLoadsTheBottleneck(t *testing.T) {
	l := bottleneckLab(t)
	hosts, err := LabHosts(l)
	if err != nil {
		t.Fatal(err)
	}
	idle := download(t, l, 4<<20)

	ctx := context.Background()
	b, err := Start(ctx, hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Ramp = 500 * time.Millisecond
	if err := b.Set(ctx, "C4B"); err != nil {
		t.Fatal(err)
	}
	b.Mark()
	busy := download(t, l, 4<<20)
	time.Sleep(time.Second)
	bg := b.Since()
	if bg == nil || bg.Level != "C4B" || len(bg.Flows) != 10 {
		t.Fatalf("background %+v", bg)
	}
	var tcp, udp float64
	for _, f := range bg.Flows {
		wantFrom, wantTo := map[string]string{"ipv4": lab.Gen4S, "ipv6": lab.Gen6S}[f.Path], map[string]string{"ipv4": lab.Gen4C, "ipv6": lab.Gen6C}[f.Path]
		if f.Proto == "udp" {
			wantFrom, wantTo = wantTo, wantFrom
			udp += f.DeliveredMbps
		} else {
			tcp += f.DeliveredMbps
		}
		if f.From != wantFrom || f.To != wantTo || f.Err != "" {
			t.Errorf("flow %d %s/%s: %s -> %s (%s)", f.ID, f.Proto, f.Path, f.From, f.To, f.Err)
		}
		if f.OfferedMbps <= 0 || f.DeliveredMbps <= 0 {
			t.Errorf("flow %d: offered %.2f, delivered %.2f Mbit/s", f.ID, f.OfferedMbps, f.DeliveredMbps)
		}
	}
	// 90 Mbit/s of TCP offered into 100 Mbit/s, shared with the download.
	if tcp < 60 || tcp > 100 || math.Abs(udp-10) > 3 {
		t.Errorf("delivered TCP %.1f Mbit/s (offered 90), UDP %.1f (offered 10)", tcp, udp)
	}
	if busy < idle*3/2 {
		t.Errorf("a 4 MiB download took %v idle and %v under C4B: the background did not load the bottleneck", idle, busy)
	}
	t.Logf("download idle %v, under C4B %v; background TCP %.1f, UDP %.1f Mbit/s", idle, busy, tcp, udp)

	if err := b.Set(ctx, "none"); err != nil || b.Level() != "" || b.Since() != nil {
		t.Fatalf("none: %v, level %q", err, b.Level())
	}
	if err := b.Set(ctx, "C9B"); err == nil {
		t.Error("level C9B accepted")
	}
}
