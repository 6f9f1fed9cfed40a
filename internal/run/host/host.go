// Package host reads the facts about this machine that a result must carry
// (kernel, the sysctls that shape connection-heavy tests, limits) and raises
// the file-descriptor limit a load of thousands of connections needs.
//
// It imports nothing of v6lab.
package host

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// Sysctls lists the kernel settings that change what a connection-per-
// transaction load measures; they are recorded in every result header.
var Sysctls = []string{
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_tw_reuse",
	"net.ipv4.tcp_fin_timeout",
	"net.core.somaxconn",
	"net.ipv4.tcp_max_syn_backlog",
	"net.ipv4.tcp_syncookies",
	"net.ipv6.conf.all.disable_ipv6",
	"net.ipv4.tcp_congestion_control",
}

// Kernel returns the kernel release (uname -r).
func Kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return strings.TrimSpace(string(b))
}

// ReadSysctl reads one sysctl by its dotted name.
func ReadSysctl(name string) (string, error) {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return "", fmt.Errorf("host: sysctl %s: %w", name, err)
	}
	return strings.Join(strings.Fields(string(b)), " "), nil
}

// ReadSysctls reads every name it can; unreadable ones are left out.
func ReadSysctls(names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		if v, err := ReadSysctl(n); err == nil {
			out[n] = v
		}
	}
	return out
}

// RaiseNoFile lifts the soft open-file limit to the hard limit and returns
// the limit now in force.
func RaiseNoFile() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("host: getrlimit: %w", err)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, fmt.Errorf("host: raise open-file limit to %d: %w", l.Max, err)
		}
	}
	return l.Cur, nil
}

// NoFileHard is the hard open-file limit: what RaiseNoFile will give.
func NoFileHard() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Max
}

// Name is the host's name: $V6LAB_HOST when set (in a Kubernetes pod,
// the node's name, as the pod's own host name says nothing of the
// machine), else the host name, or "" when unknown.
func Name() string {
	if n := os.Getenv("V6LAB_HOST"); n != "" {
		return n
	}
	n, _ := os.Hostname()
	return n
}

// Clock describes how far this host's wall clock can be trusted, for runs
// that must start together on several hosts: the kernel's clock source and
// whether NTP (or PTP) keeps it synchronised, with the kernel's estimate
// of its error.
func Clock() string {
	src := "unknown clock source"
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		src = "clock source " + strings.TrimSpace(string(b))
	}
	var tx syscall.Timex
	state, err := syscall.Adjtimex(&tx)
	const staUnsync, timeError = 0x0040, 5
	switch {
	case err != nil:
		return src + ", synchronisation unknown (" + err.Error() + ")"
	case state == timeError || tx.Status&staUnsync != 0:
		return src + ", not synchronised (no NTP or PTP daemon disciplines it)"
	}
	return fmt.Sprintf("%s, synchronised (estimated error %d µs, maximum %d µs)", src, tx.Esterror, tx.Maxerror)
}
