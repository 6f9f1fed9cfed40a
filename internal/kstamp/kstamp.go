// Package kstamp reads the kernel's own timestamps of a socket's packets
// (SO_TIMESTAMPING software stamps): when a packet left the host, when
// received bytes arrived. path's sockets and evloop's raw ones share it.
//
// It imports nothing of v6lab.
package kstamp

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Flags ask for software transmit and receive stamps; transmit stamps
// come back on the error queue without the packet (OPT_TSONLY), tied to
// their send (OPT_ID).
const Flags = unix.SOF_TIMESTAMPING_SOFTWARE | unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_RX_SOFTWARE |
	unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// Enable turns the stamps on for socket fd.
func Enable(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, Flags)
}

// EnableRx turns receive stamps alone on for socket fd: what a TCP
// socket can take before it connects (the kernel refuses OPT_ID on an
// unconnected TCP socket).
func EnableRx(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_SOFTWARE|unix.SOF_TIMESTAMPING_RX_SOFTWARE)
}

// OOBSize is enough control-message space for a stamp.
const OOBSize = 128

// Parse finds the software stamp in control messages (zero if none).
func Parse(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPING && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0])) // [0]: the software stamp
			if ts.Sec != 0 || ts.Nsec != 0 {
				return time.Unix(ts.Sec, ts.Nsec)
			}
		}
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
