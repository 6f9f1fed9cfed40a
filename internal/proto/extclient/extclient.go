// Package extclient measures a download with another client program (curl
// or wget) instead of v6lab's own, to separate client effects from stack
// effects as the Regensburg study did with two clients. The name is looked
// up by v6lab (the lookup is timed like any transaction's), then the
// program fetches from that address with its own family pinned.
package extclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os/exec"
	"strconv"
	"strings"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
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
	URL      *url.URL // http://, https:// or ftp://
	Path     path.Path
	Resolver *path.Resolver
	Source   netip.Addr
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
	ip, err := tr.Lookup(ctx, c.Resolver, host, c.Path)
	tr.Mark(&tr.S.ResolveNS)
	if err != nil {
		return tr.Fail(ctx, "resolve", err)
	}
	port := c.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "ftp": "21"}[c.URL.Scheme]
	}
	remote := netip.AddrPortFrom(ip, uint16(atoi(port)))
	tr.S.Remote = remote.String()
	family := "-4"
	if c.Path.IsIPv6() {
		family = "-6"
	}
	var args []string
	switch c.Program {
	case "curl":
		// --resolve pins the name to the address v6lab looked up.
		args = []string{family, "--silent", "--show-error", "--fail", "--output", "/dev/null", "--write-out",
			"%{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total} %{size_download} %{response_code}\n"}
		if _, err := netip.ParseAddr(host); err != nil {
			addr := ip.String()
			if ip.Is6() {
				addr = "[" + addr + "]"
			}
			args = append(args, "--resolve", fmt.Sprintf("%s:%s:%s", host, port, addr))
		}
		if c.Source.IsValid() {
			args = append(args, "--interface", c.Source.String())
		}
		args = append(args, c.URL.String())
	case "wget":
		u := *c.URL
		u.Host = netip.AddrPortFrom(ip, uint16(atoi(port))).String()
		args = []string{family, "--quiet", "--output-document", "/dev/null", "--tries", "1"}
		if c.Source.IsValid() {
			args = append(args, "--bind-address", c.Source.String())
		}
		args = append(args, u.String())
	default:
		return tr.Fail(ctx, "protocol", fmt.Errorf("extclient: unknown program %q (want %s)", c.Program, strings.Join(Programs, " or ")))
	}
	cmd := exec.CommandContext(ctx, c.Program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if !strings.HasPrefix(msg, c.Program) {
			msg = c.Program + ": " + msg
		}
		return tr.Fail(ctx, "io", errors.New(msg))
	}
	if c.Program == "wget" {
		// wget's time includes starting the program (about a millisecond).
		tr.S.BytesIn = c.Expect
		return tr.Done("wget exit 0")
	}
	f := strings.Fields(stdout.String())
	if len(f) != 6 {
		return tr.Fail(ctx, "protocol", fmt.Errorf("curl: unexpected --write-out %q", stdout.String()))
	}
	secs := func(s string) int64 { v, _ := strconv.ParseFloat(s, 64); return int64(v * 1e9) }
	// curl's clock starts after v6lab's lookup ended.
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
	s := tr.Done(fmt.Sprintf("curl %s, %d bytes", f[5], size))
	// The program's own total, not its start-up, is the transfer.
	s.TotalNS = base + secs(f[3])
	return s
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
