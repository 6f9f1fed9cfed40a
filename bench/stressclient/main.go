// Command stressclient holds many hostile connections open to one server
// on this machine, for bench/stress-servers: half of them trickle a
// command line a byte a second and never end it (slowloris), half send one
// oversized line (1 MiB without a newline) and then wait. It prints how
// many connections it opened, and how many the server had closed when it
// stopped. It refuses any address that is not loopback.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "", "loopback ADDR:PORT of the server")
	conns := flag.Int("conns", 1000, "connections to hold")
	hold := flag.Duration("hold", 10*time.Second, "how long to hold them")
	flag.Parse()
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil || !ap.Addr().IsLoopback() {
		fmt.Fprintf(os.Stderr, "stressclient: -addr must be a loopback ADDR:PORT, not %q\n", *addr)
		os.Exit(2)
	}
	big := append(bytes.Repeat([]byte("A"), 1<<20), ' ')
	network := "tcp4" // pinned to the address's family, as every v6lab socket
	if ap.Addr().Is6() {
		network = "tcp6"
	}
	var opened, closed atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(*hold)
	for i := range *conns {
		c, err := net.DialTimeout(network, ap.String(), 5*time.Second)
		if err != nil {
			continue
		}
		opened.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			gone := make(chan struct{})
			go func() { // the server closing the connection ends it
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						if time.Now().Before(stop) {
							closed.Add(1) // the server's doing, not ours
						}
						close(gone)
						return
					}
				}
			}()
			if i%2 == 1 {
				c.SetWriteDeadline(stop)
				c.Write(big)
			}
			for time.Now().Before(stop) {
				select {
				case <-gone:
					return
				case <-time.After(time.Second):
				}
				if i%2 == 0 {
					c.SetWriteDeadline(time.Now().Add(time.Second))
					c.Write([]byte("N"))
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("opened %d closed-by-server %d\n", opened.Load(), closed.Load())
}
