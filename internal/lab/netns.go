// Package lab builds a dual-stack testbed of network namespaces — a client
// host, two routers and a server host, with a 6in4 tunnel between the
// routers — and is the only code that switches namespaces.
//
// It imports only lab/bpf, lab/sixin4, specfile, units and path: never a protocol or the experiment.
package lab

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/vishvananda/netns"
)

// NetnsDir is where named namespaces live, shared with `ip netns`.
const NetnsDir = "/var/run/netns"

// Prefix starts the name of every namespace v6lab makes, so leftovers of a
// killed run can always be found.
const Prefix = "v6lab-"

// ErrPrivilege is wrapped when the lab cannot be built for lack of privilege.
var ErrPrivilege = errors.New("building a lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")

// Do runs fn inside the named namespace, on a goroutine of its own locked
// to its own OS thread, and waits for it: the caller's thread never
// changes namespace, so a caller that locked its thread for its own
// reasons, or code that runs after a panic in fn, is never left in the
// lab's namespace (the pattern of containernetworking/plugins' ns.Do).
// Sockets fn opens stay in that namespace whatever thread later uses them;
// fn must not start goroutines that expect to be in it. If the thread
// cannot be returned to its own namespace it is never unlocked, so the Go
// runtime retires it instead of reusing a thread in the wrong namespace.
func Do(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: current namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromName(name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: namespace %s: %w", name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: enter namespace %s: %w", name, err)
			return
		}
		var ferr error
		defer func() {
			if err := netns.Set(orig); err != nil {
				// Leave the thread locked: it dies with this goroutine.
				errc <- errors.Join(ferr, fmt.Errorf("lab: leave namespace %s: %w", name, err))
				return
			}
			runtime.UnlockOSThread()
			if p := recover(); p != nil {
				errc <- fmt.Errorf("lab: in namespace %s: panic: %v", name, p)
				return
			}
			errc <- ferr
		}()
		ferr = fn()
	}()
	return <-errc
}

// createNamed makes a named namespace without moving the caller into it.
func createNamed(name string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("lab: current namespace: %w", err)
	}
	defer orig.Close()
	h, err := netns.NewNamed(name)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("lab: create namespace %s: %w", name, ErrPrivilege)
		}
		return fmt.Errorf("lab: create namespace %s: %w", name, err)
	}
	h.Close()
	if err := netns.Set(orig); err != nil {
		// The thread stays locked and is discarded (see Do).
		runtime.LockOSThread()
		return fmt.Errorf("lab: return from namespace %s: %w", name, err)
	}
	return nil
}

// deleteNamed removes a named namespace; a missing one is not an error.
func deleteNamed(name string) error {
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lab: delete namespace %s: %w", name, err)
	}
	return nil
}

// Namespaces lists the named namespaces whose name starts with prefix.
func Namespaces(prefix string) ([]string, error) {
	ents, err := os.ReadDir(NetnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}
