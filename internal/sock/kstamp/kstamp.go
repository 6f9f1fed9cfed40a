// Package kstamp reads the kernel's own timestamps of a socket's packets
// (SO_TIMESTAMPING software stamps): when a packet left the host, when
// received bytes arrived. path's sockets and evloop's raw ones share it.
//
// It imports nothing of v6lab.
package kstamp

import (
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Flags ask for software transmit and receive stamps; transmit stamps
// come back on the error queue without the packet (OPT_TSONLY), tied to
// their send (OPT_ID).
const Flags = unix.SOF_TIMESTAMPING_SOFTWARE | unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_RX_SOFTWARE |
	unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// RxFlags ask for software receive stamps alone (EnableRx).
const RxFlags = unix.SOF_TIMESTAMPING_SOFTWARE | unix.SOF_TIMESTAMPING_RX_SOFTWARE

// Enable turns the stamps on for socket fd.
func Enable(fd int) error {
	Hold()
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, Flags)
}

// EnableRx turns receive stamps alone on for socket fd: what a TCP
// socket can take before it connects (the kernel refuses OPT_ID on an
// unconnected TCP socket).
func EnableRx(fd int) error {
	Hold()
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, RxFlags)
}

// Disable turns socket fd's stamps off (its reads then carry none).
func Disable(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, 0)
}

// OOBSize is enough control-message space for a stamp.
const OOBSize = 128

// Parse finds the software stamp in control messages (zero if none). It
// walks the messages in place: every read of the event loops and the load
// engines parses one, and unix.ParseSocketControlMessage allocates.
func Parse(oob []byte) time.Time {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.SizeofCmsghdr || n > len(oob) {
			return time.Time{}
		}
		data := oob[unix.CmsgLen(0):n]
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPING && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0])) // [0]: the software stamp
			if ts.Sec != 0 || ts.Nsec != 0 {
				return time.Unix(ts.Sec, ts.Nsec)
			}
		}
		next := unix.CmsgSpace(n - unix.CmsgLen(0))
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return time.Time{}
}

// Sent reads the transmit stamp of a send on fd from its error queue,
// without waiting (zero if none is there yet).
func Sent(fd int, oob []byte) time.Time {
	_, oobn, _, _, err := unix.Recvmsg(fd, nil, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
	if err != nil {
		return time.Time{}
	}
	return Parse(oob[:oobn])
}

// Receive stamps come from one switch of the whole kernel (a static key,
// netstamp_needed_key) that is on while any socket wants them. Turning it
// on is deferred to a work item, and it goes off again when the last such
// socket closes: a lone transaction's reply can arrive before the switch
// is on (and so carry no stamp), and at one connection every transaction
// would flip it off and on, a machine-wide code patch between
// measurements. Hold keeps it on for the life of the process.
var hold sync.Once

// Hold opens, once per process, a socket that wants receive stamps and
// keeps it open, then waits (about 200 ms at most) until a datagram it sends
// itself over loopback comes back stamped. Enable and EnableRx call it.
func Hold() {
	hold.Do(func() {
		// On a goroutine of its own: a caller locked to a thread in a lab
		// namespace would otherwise pin that namespace with the socket.
		done := make(chan struct{})
		go func() {
			defer close(done)
			holdOn()
		}()
		<-done
	})
}

func holdOn() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return
	}
	// Never closed: the socket is the hold.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_SOFTWARE|unix.SOF_TIMESTAMPING_RX_SOFTWARE) != nil {
		return
	}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 5000})
	if unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}) != nil {
		return // no loopback here: the switch comes on soon enough unchecked
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		return
	}
	var b [1]byte
	oob := make([]byte, OOBSize)
	for try := 0; try < 200; try++ {
		if unix.Sendto(fd, b[:], 0, self) != nil {
			return
		}
		_, oobn, _, _, err := unix.Recvmsg(fd, b[:], oob, 0)
		if err == nil && !Parse(oob[:oobn]).IsZero() {
			return
		}
		time.Sleep(time.Millisecond) // the work item has not run yet
	}
}
