// Package extclient measures a download with another client program (curl
// or wget) instead of v6lab's own, to separate client effects from stack
// effects as the Regensburg study did with two clients. The name is looked
// up by v6lab (the lookup is timed like any transaction's), then the
// program fetches from that address with its own family pinned.
package extclient

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Programs this package can drive.
var Programs = []string{"curl", "wget"}

// ErrMissing is wrapped when the program is not installed.
var ErrMissing = errors.New("not installed")

// Check says whether program can be run, and what to install if not.
func Check(program string) error {
	if _, err := exec.LookPath(program); err != nil {
		return fmt.Errorf("extclient: %s is %w (apt-get install %s)", program, ErrMissing, program)
	}
	return nil
}

// Client downloads URL with Program; one download per Do.
type Client struct {
	Program  string
	URL      *url.URL // a URL the program downloads (http://, https://, …)
	Path     path.Path
	Resolver *path.Resolver
	Source   netip.Addr
	// LookupName, when set, is the name the dual path looks up instead
	// of the URL's host (proto.AAAADelayLabel).
	LookupName string
	// AttemptDelay, when set, is curl's Happy Eyeballs timeout on the
	// dual path (--happy-eyeballs-timeout-ms; curl's default is 200 ms).
	AttemptDelay time.Duration
	// Expect is the file's size when known: a different count fails the
	// sample (wget reports no count, so its successful downloads count as
	// Expect bytes).
	Expect int64
}

// Do runs one download. For curl the phases come from its own timers
// (-w); for wget only the whole time is known.
func (c *Client) Do(ctx context.Context, _ int) result.Sample {
	tr := load.Begin(c.URL.Scheme, c.Path)
	host := c.URL.Hostname()
	ips, err := c.resolve(ctx, tr, host)
	tr.Mark(&tr.S.ResolveNS)
	if err != nil {
		return tr.Fail(ctx, "resolve", err)
	}
	port := c.URL.Port()
	if port == "" {
		// The scheme's well-known port (Go knows them without /etc/services).
		n, err := net.LookupPort("tcp", c.URL.Scheme)
		if err != nil {
			return tr.Fail(ctx, "protocol", fmt.Errorf("extclient: %s has no port and its scheme none known", c.URL.Redacted()))
		}
		port = strconv.Itoa(n)
	}
	tr.S.Remote = netip.AddrPortFrom(ips[0], uint16(atoi(port))).String()
	var args []string
	switch c.Program {
	case "curl":
		args = c.curlArgs(host, port, ips)
	case "wget":
		args = c.wgetArgs(port, ips[0])
	default:
		return tr.Fail(ctx, "protocol", fmt.Errorf("extclient: unknown program %q (want %s)", c.Program, strings.Join(Programs, " or ")))
	}
	out, err := c.run(ctx, args)
	if err != nil {
		return tr.Fail(ctx, "io", err)
	}
	if c.Program == "wget" {
		// wget's time includes starting the program (about a millisecond).
		tr.S.BytesIn = c.Expect
		return tr.Done("wget exit 0")
	}
	return c.curlSample(ctx, tr, out, port)
}

// resolve looks the host up as v6lab does for any transaction: both
// families on the dual path (under LookupName when set), else the path's.
func (c *Client) resolve(ctx context.Context, tr *load.Trace, host string) ([]netip.Addr, error) {
	if c.Path.Kind().Dual {
		return c.lookupBoth(ctx, tr, cmp.Or(c.LookupName, host))
	}
	ip, err := tr.Lookup(ctx, c.Resolver, host, c.Path)
	return []netip.Addr{ip}, err
}

// family is the option that pins curl's or wget's family to the path's.
func (c *Client) family() string {
	if c.Path.IsIPv6() {
		return "-6"
	}
	return "-4"
}

// curlWriteOut is what curl prints after the transfer, in the order
// curlSample reads it.
const curlWriteOut = "%{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total} %{size_download} %{response_code} %{remote_ip}\n"

// curlArgs: --resolve pins the name to the addresses v6lab looked up; on
// the dual path curl gets both and races them itself (its own Happy
// Eyeballs, 200 ms), and says which it used.
func (c *Client) curlArgs(host, port string, ips []netip.Addr) []string {
	args := []string{"--silent", "--show-error", "--fail", "--output", "/dev/null", "--write-out", curlWriteOut}
	if !c.Path.Kind().Dual {
		args = append([]string{c.family()}, args...)
	} else if c.AttemptDelay > 0 {
		args = append(args, "--happy-eyeballs-timeout-ms", strconv.FormatInt(c.AttemptDelay.Milliseconds(), 10))
	}
	if _, err := netip.ParseAddr(host); err != nil {
		var addrs []string
		for _, a := range ips {
			if a.Is6() {
				addrs = append(addrs, "["+a.String()+"]")
			} else {
				addrs = append(addrs, a.String())
			}
		}
		args = append(args, "--resolve", fmt.Sprintf("%s:%s:%s", host, port, strings.Join(addrs, ",")))
	}
	if c.Source.IsValid() {
		args = append(args, "--interface", c.Source.String())
	}
	return append(args, c.URL.String())
}

// wgetArgs: wget has no --resolve, so it is given the address in place
// of the name.
func (c *Client) wgetArgs(port string, ip netip.Addr) []string {
	u := *c.URL
	u.Host = netip.AddrPortFrom(ip, uint16(atoi(port))).String()
	args := []string{c.family(), "--quiet", "--output-document", "/dev/null", "--tries", "1"}
	if c.Source.IsValid() {
		args = append(args, "--bind-address", c.Source.String())
	}
	return append(args, u.String())
}

// run runs the program and returns what it printed; a failure carries
// the program's own words (its standard error), named after it.
func (c *Client) run(ctx context.Context, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if !strings.HasPrefix(msg, c.Program) {
			msg = c.Program + ": " + msg
		}
		return "", errors.New(msg)
	}
	return stdout.String(), nil
}

// curlSample reads curl's --write-out into the sample's phases. curl's
// clock starts after v6lab's lookup ended, so each of its times is added
// to the lookup's; on the dual path it also says which family won.
func (c *Client) curlSample(ctx context.Context, tr *load.Trace, out, port string) result.Sample {
	f := strings.Fields(out)
	if len(f) != 7 {
		return tr.Fail(ctx, "protocol", fmt.Errorf("curl: unexpected --write-out %q", out))
	}
	secs := func(s string) int64 { v, _ := strconv.ParseFloat(s, 64); return int64(v * 1e9) }
	base := tr.S.ResolveNS
	tr.S.ConnectNS = base + secs(f[0])
	if a := secs(f[1]); a > 0 {
		tr.S.TLSNS = base + a
	}
	tr.S.FirstByteNS = base + secs(f[2])
	size, _ := strconv.ParseInt(f[4], 10, 64)
	tr.S.BytesIn = size
	if c.Expect > 0 && size != c.Expect {
		return tr.Fail(ctx, "protocol", fmt.Errorf("curl: short transfer: %d of %d bytes", size, c.Expect))
	}
	if c.Path.Kind().Dual {
		won := 0.0
		if a, err := netip.ParseAddr(f[6]); err == nil {
			if a.Is6() {
				won = 1
			}
			tr.S.Remote = netip.AddrPortFrom(a, uint16(atoi(port))).String()
		}
		tr.S.Metrics = map[string]float64{"ipv6_won": won, "he_connect_ms": float64(tr.S.ConnectNS) / 1e6}
	}
	s := tr.Done(fmt.Sprintf("curl %s, %d bytes", f[5], size))
	// The program's own total, not its start-up, is the transfer.
	s.TotalNS = base + secs(f[3])
	return s
}

// lookupBoth asks for the name's AAAA and A records (the dual path),
// IPv6's first in the list as a dual-stack client orders them; a family
// without an answer is left out, and only no answer at all is an error.
func (c *Client) lookupBoth(ctx context.Context, tr *load.Trace, host string) ([]netip.Addr, error) {
	res := c.Resolver.OneFamily()
	tr.Restart()
	var out []netip.Addr
	var errs []error
	for _, p := range []path.Path{path.IPv6, path.IPv4} {
		hook := &path.LookupHook{}
		a, err := res.LookupFrom(ctx, host, p, hook)
		tr.AddQueries(hook.Queries())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
