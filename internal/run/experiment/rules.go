package experiment

import (
	"fmt"
	"slices"
	"time"

	"v6lab/internal/proto"
)

// The rules below are shared by experiment files (which add the file, line
// and field) and command-line flags (CellGroup.Validate, Experiment.Validate):
// one rule, one piece of code, whichever way a value arrives.

// CheckName checks an experiment name: it names a result directory.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q cannot name a result directory: letters, digits, dot, dash and underscore, up to 64, the first a letter or digit", name)
	}
	return nil
}

// checkConns checks connection counts; i is the bad entry's index.
func checkConns(ns []int) (i int, err error) {
	if len(ns) == 0 {
		return -1, fmt.Errorf("the list is empty")
	}
	for i, n := range ns {
		if n < 1 || n > MaxConns {
			return i, fmt.Errorf("%d: want 1 to %d connections", n, MaxConns)
		}
		if slices.Contains(ns[:i], n) {
			return i, fmt.Errorf("%d is listed twice", n)
		}
	}
	return -1, nil
}

func checkRuns(n int) error {
	if n < 1 || n > 10000 {
		return fmt.Errorf("%d: want 1 to 10000 runs per cell", n)
	}
	return nil
}

func checkWarmup(w, runs int) error {
	if w < 0 {
		return fmt.Errorf("%d: must not be negative", w)
	}
	if w >= runs {
		return fmt.Errorf("%d warm-up runs leave none of the %d runs to count", w, runs)
	}
	return nil
}

// optKeepalive is the option (http's, with HTTP/2 or 3) that keeps each
// user's connection for its later transactions.
const optKeepalive = "keepalive"

// optDialer is the option that says who races the families on the dual
// path (raceName names an unlabelled racing cell after it).
const optDialer = "dialer"

// keeps says whether o keeps connections (keepalive).
func keeps(o proto.Options) bool {
	if o == nil {
		return false
	}
	f, ok := proto.FieldOf(o, optKeepalive)
	return ok && !f.IsZero()
}

// checkKeptWarmup: with keepalive, each user's first transaction opens its
// connection (a lookup and a handshake) and only the later ones run on a
// kept connection, so without a warm-up run a cell of a few transactions
// a user would count each user's cold first connection among the kept
// ones. A sustained run (duration) may: each user's first transaction is
// one of its many, as h2load and oha count theirs.
func checkKeptWarmup(w int, d time.Duration, o proto.Options) error {
	if w == 0 && d == 0 && keeps(o) {
		return fmt.Errorf("0 with keepalive: each user's first transaction opens its connection (a lookup and a handshake) and only its later ones are kept, so the counted kept-connection figures would hold the first, new connections too; give 1 or more warm-up runs (the first run opens the connections, the counted runs keep them), or a sustained duration, where each user's first transaction is one of its many")
	}
	return nil
}

// Bounds of an experiment's times: past them a value is a typo (100000h,
// a year's timeout), and a plan's estimate stays a time.
const (
	// MaxTimeout holds the longest trial (an hour and its warm-up).
	MaxTimeout  = 2 * time.Hour
	MaxPause    = time.Hour
	MaxDuration = 24 * time.Hour
)

func checkTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be more than zero")
	}
	return checkAtMost(d, MaxTimeout)
}

func checkPause(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative")
	}
	return checkAtMost(d, MaxPause)
}

// checkDuration checks a sustained run's length.
func checkDuration(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative")
	}
	return checkAtMost(d, MaxDuration)
}

func checkAtMost(d, most time.Duration) error {
	if d > most {
		return fmt.Errorf("%v is more than %v", d, most)
	}
	return nil
}

// FDsPerConn is what one simultaneous user holds open at once in the
// measuring process: its connection (the stub lookup's socket is closed
// before the connection opens), plus the server's end when the embedded
// server runs in the same process (serverFDs: 1 on loopback, 0 in the lab,
// whose servers are another process's).
const FDsPerConn = 1

// fdReserve covers the process's own files, listeners and captures.
const fdReserve = 256

// CheckOpenFiles says whether this process, allowed limit open files (the
// hard RLIMIT_NOFILE, which v6lab raises its own limit to), can hold the
// largest connection count of the experiment, and if not, how many it can.
func (e *Experiment) CheckOpenFiles(limit uint64, serverFDs int) error {
	fdsPerConn := uint64(FDsPerConn + serverFDs)
	most := 0
	for _, c := range e.Groups {
		for _, n := range c.Conns {
			most = max(most, n)
		}
	}
	need := uint64(most)*fdsPerConn + fdReserve
	if need > limit {
		can := 0
		if limit > fdReserve {
			can = int((limit - fdReserve) / fdsPerConn)
		}
		return fmt.Errorf("%d simultaneous connections need about %d open files, and this process may open at most %d (ulimit -Hn): at most %d connections are possible here; raise the hard limit (e.g. in /etc/security/limits.conf) for more", most, need, limit, can)
	}
	return nil
}
