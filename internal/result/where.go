package result

import "fmt"

// Where says where an experiment runs: the lab v6lab builds, loopback,
// the hosts its cells name, or the sites of a survey's list. Auto is a choice still to make (the lab
// when this process may build one, else loopback); a result records
// where it ran.
type Where string

// Places to run.
const (
	Auto     Where = "auto"
	Lab      Where = "lab"
	Loopback Where = "loopback"
	Hosts    Where = "hosts"
	// Sites: a survey (v6lab survey) of the sites a list names.
	Sites Where = "sites"
)

// Wheres are the places an experiment may name, in the order help lists
// them.
var Wheres = []Where{Auto, Lab, Loopback, Hosts, Sites}

// ParseWhere reads a place to run.
func ParseWhere(s string) (Where, error) {
	for _, w := range Wheres {
		if string(w) == s {
			return w, nil
		}
	}
	return "", fmt.Errorf("%q is not a place to run: want auto, lab, loopback, hosts or sites", s)
}

// UnmarshalText reads a place, and "remote", the name results of format
// version 3 and before gave hosts.
func (w *Where) UnmarshalText(b []byte) error {
	if len(b) == 0 { // not recorded
		*w = ""
		return nil
	}
	if string(b) == "remote" {
		*w = Hosts
		return nil
	}
	v, err := ParseWhere(string(b))
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// OffLab reports whether a run there has only the families themselves
// (loopback, named hosts, a survey's sites): no tunnel, no translator.
func (w Where) OffLab() bool { return w == Loopback || w == Hosts || w == Sites }

// ErrKind groups a failed sample's reason (docs/formats.md lists them).
type ErrKind string

// The kinds of failure.
const (
	// ErrTimeout: the transaction did not complete within its timeout.
	ErrTimeout ErrKind = "timeout"
	// ErrStall: the transaction timed out on a connection that was up
	// and on which nothing had arrived for a second or more: it stalled
	// (a path MTU black hole, a server that stopped answering).
	ErrStall ErrKind = "stall"
	// ErrRefused: the server refused the connection (RST to the SYN).
	ErrRefused ErrKind = "refused"
	// ErrReset: the connection was reset or broken during the exchange.
	ErrReset ErrKind = "reset"
	// ErrFamily: an end of the connection was not of the path's family.
	ErrFamily ErrKind = "family"
	// ErrResolve: the name had no address of the path's record type, or
	// the lookup failed.
	ErrResolve ErrKind = "resolve"
	// ErrProtocol: the reply was not what completes the transaction (a
	// status, a refusal, a malformed reply, a short body).
	ErrProtocol ErrKind = "protocol"
	// ErrResource: the client ran out of ports or file descriptors.
	ErrResource ErrKind = "resource"
	// ErrIO: any other error of a system call.
	ErrIO ErrKind = "io"
	// ErrLoss: a UDP trial's receiver saw none of its datagrams.
	ErrLoss ErrKind = "loss"
	// ErrPoolExhausted: a NAT on the lab's path (the stateful PLAT, the
	// AFTR) had no free port of its pool for the connection, and dropped
	// it (the client saw a timeout).
	ErrPoolExhausted ErrKind = "pool_exhausted"
)

// ErrKinds lists every kind, in the order docs name them.
var ErrKinds = []ErrKind{ErrTimeout, ErrStall, ErrRefused, ErrReset, ErrFamily, ErrResolve, ErrProtocol, ErrResource, ErrIO, ErrLoss, ErrPoolExhausted}
