package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// StartCaddy serves content and generated files over HTTPS on every
// address at tls.Port: HTTP/3 over QUIC on the port's UDP, HTTP/2 and
// HTTP/1.1 by ALPN on its TCP, with tls's certificate (name is the name
// it answers when a client sends none). Its admin endpoint is off, and
// everything it keeps (its autosaved configuration, its storage) is in
// its own directory.
func StartCaddy(ctx context.Context, at Place, addrs []netip.Addr, name string, content Content, gen Generated, tls *TLS) (*Server, error) {
	bin, err := lookPath("caddy")
	if err != nil {
		return nil, err
	}
	dir, err := at.mkdir("caddy")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("caddy: %w", err)
	}
	if err := writeRoot(filepath.Join(dir, "www"), content, gen); err != nil {
		return fail(err)
	}
	cert, key, err := tls.write(dir)
	if err != nil {
		return fail(err)
	}
	conf, err := caddyConf(dir, addrs, tls.Port, name, cert, key)
	if err != nil {
		return fail(err)
	}
	cf := filepath.Join(dir, "caddy.json")
	if err := os.WriteFile(cf, conf, 0o644); err != nil {
		return fail(err)
	}
	// Caddy writes under XDG_CONFIG_HOME and XDG_DATA_HOME: its own
	// directory's, not root's home.
	s, err := start(ctx, "caddy", dir, "", at, netip.AddrPortFrom(addrs[0], uint16(tls.Port)), "/usr/bin/env",
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "HOME="+dir,
		bin, "run", "--config", cf)
	if err != nil {
		return nil, err
	}
	// Its TCP listener is up: its QUIC socket is bound beside it.
	if err := waitUDP(ctx, at.Prefix, netip.AddrPortFrom(addrs[0], uint16(tls.Port))); err != nil {
		s.Stop()
		return nil, fmt.Errorf("servers: caddy: %w", err)
	}
	out, _ := exec.Command(bin, "version").Output()
	s.Version = "Caddy " + strings.TrimSpace(strings.SplitN(string(out)+" ", " ", 2)[0])
	return s, nil
}

// caddyConf is Caddy's JSON configuration: one server on every address at
// port, HTTP/1.1, 2 and 3, serving dir/www's files with the certificate
// and key given, no automatic HTTPS (no ACME, no redirect on port 80), no
// admin endpoint, errors only in its log.
func caddyConf(dir string, addrs []netip.Addr, port int, name, cert, key string) ([]byte, error) {
	var listen []string
	for _, a := range addrs {
		listen = append(listen, netip.AddrPortFrom(a, uint16(port)).String())
	}
	type obj = map[string]any
	conf := obj{
		"admin":   obj{"disabled": true},
		"logging": obj{"logs": obj{"default": obj{"level": "ERROR"}}},
		"storage": obj{"module": "file_system", "root": filepath.Join(dir, "data")},
		"apps": obj{
			"http": obj{"servers": obj{"v6lab": obj{
				"listen":                  listen,
				"protocols":               []string{"h1", "h2", "h3"},
				"routes":                  []obj{{"handle": []obj{{"handler": "file_server", "root": filepath.Join(dir, "www")}}}},
				"automatic_https":         obj{"disable": true},
				"tls_connection_policies": []obj{{"default_sni": name}},
			}}},
			"tls": obj{"certificates": obj{"load_files": []obj{{"certificate": cert, "key": key}}}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// waitUDP waits until a UDP socket is bound to addr's port (in the
// namespace of prefix, or here), for 5 s at most.
func waitUDP(ctx context.Context, prefix []string, addr netip.AddrPort) error {
	want := fmt.Sprintf(":%04X ", addr.Port())
	deadline := time.Now().Add(5 * time.Second)
	for {
		argv := append(append([]string{}, prefix...), "cat", "/proc/net/udp", "/proc/net/udp6")
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.HasSuffix(f[1]+" ", want) {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("no UDP socket bound on " + addr.String() + ": HTTP/3 is not served")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
