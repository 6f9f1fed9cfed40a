package path

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"syscall"
)

// BindSamePort calls bind(port) for every address in addrs with one port
// shared by all, so a service has one port on both families (and UDP+TCP
// can share it too, when bind opens both). With port 0 the first bind picks
// a free port; if a later address has that port taken, all are closed and
// it tries again with a new one.
func BindSamePort(addrs []netip.Addr, port int, bind func(a netip.Addr, port int) (io.Closer, int, error)) ([]io.Closer, int, error) {
	for attempt := 0; attempt < 20; attempt++ {
		var open []io.Closer
		p := port
		var err error
		for _, a := range addrs {
			var c io.Closer
			var got int
			c, got, err = bind(a, p)
			if err != nil {
				break
			}
			open = append(open, c)
			p = got
		}
		if err == nil {
			return open, p, nil
		}
		for _, c := range open {
			c.Close()
		}
		if port != 0 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("path: no port free on all of %v", addrs)
}
