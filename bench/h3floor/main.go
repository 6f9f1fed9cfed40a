// Command h3floor is the least an HTTP/3 client on quic-go (v6lab's
// version) does for a request on a kept connection, for bench/h3-floor:
// no measuring, no parsing. Each of -c connections makes one request at a
// time for -d: open a stream, write a HEADERS frame (QPACK, encoded once),
// close it, read the reply to its end. Its socket is a connected UDP
// socket handed to quic-go as a plain net.PacketConn, as v6lab's is
// (-oob: an unconnected *net.UDPConn, quic-go's own batched path with ECN
// and GSO; -stamped: v6lab's own socket, path.DialStamped, its recvmmsg
// ring and kernel stamps). It prints the requests made and the whole
// process's CPU time (user and system, its handshakes included) a request;
// -cpuprofile writes a CPU profile of the run:
//
//	h3floor -addr 127.0.0.1:PORT [-c 10] [-d 4s] [-oob | -stamped] [-cpuprofile FILE]
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"

	"v6lab/internal/sock/path"
)

type blk []byte

func (b *blk) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:4433", "server")
	conns := flag.Int("c", 10, "connections")
	dur := flag.Duration("d", 4*time.Second, "duration")
	oob := flag.Bool("oob", false, "an unconnected *net.UDPConn: quic-go's own batched socket path")
	stamped := flag.Bool("stamped", false, "v6lab's own socket (path.DialStamped: recvmmsg with kernel stamps)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the requests to this file")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	var b blk
	enc := qpack.NewEncoder(&b)
	for _, hf := range []qpack.HeaderField{{Name: ":authority", Value: *addr}, {Name: ":method", Value: "GET"},
		{Name: ":path", Value: "/"}, {Name: ":scheme", Value: "https"}, {Name: "user-agent", Value: "floor"}, {Name: "accept", Value: "*/*"}} {
		must(enc.WriteField(hf))
	}
	frame := quicvarint.Append(nil, 1)
	frame = quicvarint.Append(frame, uint64(len(b)))
	frame = append(frame, b...)
	ra, err := net.ResolveUDPAddr("udp4", *addr)
	must(err)
	var n atomic.Int64
	var wg sync.WaitGroup
	var start time.Time
	ready := make(chan struct{})
	var up sync.WaitGroup
	for range *conns {
		up.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			user(ra, *oob, *stamped, frame, &up, ready, &start, *dur, &n)
		}()
	}
	up.Wait()
	start = time.Now()
	close(ready)
	wg.Wait()
	el := time.Since(start)
	var r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(syscall.TimevalToNsec(r1.Utime) + syscall.TimevalToNsec(r1.Stime))
	fmt.Printf("requests %d cpu_us_per_request %.1f rate %.0f\n", n.Load(), float64(cpu.Microseconds())/float64(max(n.Load(), 1)), float64(n.Load())/el.Seconds())
}

// user dials one connection and, once ready is closed, makes requests on
// it one at a time until *start + dur, counting them in n.
func user(ra *net.UDPAddr, oob, stamped bool, frame []byte, up *sync.WaitGroup, ready chan struct{}, start *time.Time, dur time.Duration, n *atomic.Int64) {
	var pc net.PacketConn
	if stamped {
		ap := ra.AddrPort()
		c, err := path.DialStamped(context.Background(), path.Dialer{Path: path.OfAddr(ap.Addr())}, ap)
		if err != nil {
			log.Fatal(err)
		}
		pc = c
	} else if !oob {
		c, err := net.DialUDP("udp4", nil, ra)
		if err != nil {
			log.Fatal(err)
		}
		pc = plain{c}
	} else {
		c, err := net.ListenUDP("udp4", nil)
		if err != nil {
			log.Fatal(err)
		}
		pc = c
	}
	qt := &quic.Transport{Conn: pc}
	conn, err := qt.Dial(context.Background(), ra, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h3"}},
		&quic.Config{InitialPacketSize: 1232})
	if err != nil {
		log.Fatal(err)
	}
	ctrl, err := conn.OpenUniStream() // the control stream, an empty SETTINGS frame
	must(err)
	_, err = ctrl.Write([]byte{0, 4, 0})
	must(err)
	up.Done()
	<-ready
	end := start.Add(dur)
	buf := make([]byte, 16<<10)
	for time.Now().Before(end) {
		str, err := conn.OpenStreamSync(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		_, err = str.Write(frame)
		must(err)
		_ = str.Close()
		for {
			if _, err := str.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				log.Fatal(err)
			}
		}
		n.Add(1)
	}
	conn.CloseWithError(0, "")
}

// plain is a connected UDP socket offering what v6lab's socket offers
// quic-go (path.StampedPacketConn): ReadFrom and WriteTo, buffer sizes and
// SyscallConn (the don't-fragment bit of path MTU discovery), not
// ReadMsgUDP, so quic-go takes its basic path as it does for v6lab's.
type plain struct{ c *net.UDPConn }

func (p plain) SetReadBuffer(n int) error             { return p.c.SetReadBuffer(n) }
func (p plain) SetWriteBuffer(n int) error            { return p.c.SetWriteBuffer(n) }
func (p plain) SyscallConn() (syscall.RawConn, error) { return p.c.SyscallConn() }

func (p plain) ReadFrom(b []byte) (int, net.Addr, error)  { return p.c.ReadFrom(b) }
func (p plain) WriteTo(b []byte, _ net.Addr) (int, error) { return p.c.Write(b) }
func (p plain) Close() error                              { return p.c.Close() }
func (p plain) LocalAddr() net.Addr                       { return p.c.LocalAddr() }
func (p plain) SetDeadline(t time.Time) error             { return p.c.SetDeadline(t) }
func (p plain) SetReadDeadline(t time.Time) error         { return p.c.SetReadDeadline(t) }
func (p plain) SetWriteDeadline(t time.Time) error        { return p.c.SetWriteDeadline(t) }

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
