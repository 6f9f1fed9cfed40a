package http

// The lab's real web servers, as it runs them: nginx (plain HTTP, and
// HTTPS with HTTP/2 by ALPN) and Caddy (HTTP/3 over QUIC), serving what
// the embedded server would, with a certificate v6lab's clients pin.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"v6lab/internal/gen/content"
	"v6lab/internal/input/units"
	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
)

// realFit says why a cell cannot fetch from the lab's real servers:
// nginx (plain http, https and h2 by ALPN) and Caddy (h3).
func realFit(opts proto.Options) error {
	o := opts.(*Options)
	if o.HTTPVersion == Version2 && !o.TLS {
		return fmt.Errorf("http_version 2 in the clear (h2c): the lab's nginx speaks HTTP/2 over TLS, h2 by ALPN (leave tls out: the lab's default for http_version 2); nginx 1.22 speaks h2c only on a port of its own, without HTTP/1.1")
	}
	if o.Objects != nil || o.Client != "" {
		return fmt.Errorf("with real servers an http cell fetches nginx's page or a file: objects and client need the embedded server")
	}
	// A file is written once to nginx's root, in chunks, whatever its
	// size (servers.Generated); CheckFile bounded its size.
	return nil
}

// realNeeds: Caddy, when a cell speaks HTTP/3 or races to it (dialer v3
// with a dual path: every path of the cell then goes to Caddy's port).
func realNeeds(cells []proto.Options) []servers.Program {
	for _, c := range cells {
		if c.ServerFor() == ServerKeyH3 {
			return []servers.Program{{Name: "caddy", Package: "caddy", Role: ServerKeyH3}}
		}
	}
	return nil
}

// realFiles are what the real servers serve: the embedded server's page
// and objects, and, generated to disk once in chunks, the files of the
// cells (and the small one Settle fetches) at their paths.
func realFiles(cells []proto.Options) (servers.Content, servers.Generated, error) {
	cfg := DefaultServerConfig
	files := servers.Content{"/index.html": Page(cfg)}
	for i := range cfg.Objects {
		files[fmt.Sprintf("/obj/%d", i)] = content.Bytes(cfg.ObjectSize)
	}
	gen := servers.Generated{}
	sizes := []string{proto.SettleFile}
	for _, c := range cells {
		if f := c.(*Options).File; f != "" {
			sizes = append(sizes, f)
		}
	}
	for _, name := range sizes {
		name = strings.TrimPrefix(name, "/")
		size, err := units.ParseSize(name)
		if err != nil {
			return nil, nil, err
		}
		gen["/files/"+name] = servers.GeneratedFile{Size: size, Fill: content.Fill}
	}
	return files, gen, nil
}

// realUsesNginx: some cell fetches from nginx (plain http, or https with
// h2 by ALPN), not every one from Caddy (HTTP/3, or a dialer v3 cell that
// races to it).
func realUsesNginx(cells []proto.Options) bool {
	for _, c := range cells {
		if c.ServerFor() != ServerKeyH3 {
			return true
		}
	}
	return false
}

// startReal starts nginx serving what the embedded server would (over
// TLS too, h2 by ALPN, when a cell speaks https) when a cell fetches from
// it, and Caddy when a cell speaks HTTP/3: only the servers some cell
// uses. Their certificate is made as the embedded servers' is, and
// pinned by the clients as theirs is.
func startReal(ctx context.Context, at proto.RealPlace) (*proto.RealRunning, error) {
	files, gen, err := realFiles(at.Cells)
	if err != nil {
		return nil, err
	}
	needNginx, needTLS, needH3 := realUsesNginx(at.Cells), false, realNeeds(at.Cells) != nil
	for _, c := range at.Cells {
		needTLS = needTLS || c.ServerFor() == ServerKeyTLS
	}
	run := &proto.RealRunning{Content: content.Generated, About: map[string]string{}, Ports: map[string]int{}, Pins: map[string]string{}, HTTPS: map[int][]string{}, Stop: func() {}}
	var cert *servers.TLS
	if needTLS || needH3 {
		cfg, err := proto.SelfSigned([]string{"localhost", at.Name}, at.Listen())
		if err != nil {
			return nil, err
		}
		cert = &servers.TLS{}
		if cert.Cert, cert.Key, err = proto.PEM(cfg); err != nil {
			return nil, err
		}
		run.Pins[ServerKeyTLS], run.Pins[ServerKeyH3] = proto.CertSHA256(cfg), proto.CertSHA256(cfg)
	}
	if needNginx {
		if err := startNginx(ctx, at, files, gen, cert, needTLS, run); err != nil {
			return nil, err
		}
	}
	if !needH3 {
		return run, nil
	}
	cd, err := StartCaddy(ctx, at.Daemon, at.Listen(), at.Name, files, gen, &servers.TLS{Port: RealH3Port, Cert: cert.Cert, Key: cert.Key})
	if err != nil {
		run.Stop()
		return nil, err
	}
	stopNginx := run.Stop
	run.Stop = func() { cd.Stop(); stopNginx() }
	run.Ports[ServerKeyH3] = RealH3Port
	run.HTTPS[RealH3Port] = []string{"h3", "h2"} // QUIC on the port's UDP, TLS on its TCP
	run.About["h3 (real)"] = proto.RealAbout(cd, fmt.Sprintf(", HTTP/3 over QUIC on UDP %d (quic-go inside Caddy)", RealH3Port))
	return run, nil
}

// startNginx starts nginx for startReal, on plain http and, with needTLS,
// https with cert, and records it in run.
func startNginx(ctx context.Context, at proto.RealPlace, files servers.Content, gen servers.Generated, cert *servers.TLS, needTLS bool, run *proto.RealRunning) error {
	var ngTLS *servers.TLS
	about := ""
	if needTLS {
		ngTLS = &servers.TLS{Port: RealTLSPort, Cert: cert.Cert, Key: cert.Key}
		run.Ports[ServerKeyTLS] = RealTLSPort
		run.HTTPS[RealTLSPort] = []string{"h2"} // as the embedded https server's (ALPN)
		about = fmt.Sprintf(", https on %d (HTTP/1.1 and HTTP/2 by ALPN, OpenSSL)", RealTLSPort)
	}
	ng, err := servers.StartNginx(ctx, at.Daemon, at.Listen(), RealPort, files, gen, ngTLS)
	if err != nil {
		return err
	}
	run.Stop = ng.Stop
	run.About["http (real)"] = proto.RealAbout(ng, fmt.Sprintf(", http on %d (HTTP/1.1)%s", RealPort, about))
	if needTLS {
		run.Roles = map[string][]string{"http (real)": {Embedded.Key, ServerKeyTLS}}
	}
	return nil
}

// StartCaddy serves content and generated files over HTTPS on every
// address at tls.Port: HTTP/3 over QUIC on the port's UDP, HTTP/2 and
// HTTP/1.1 by ALPN on its TCP, with tls's certificate (name is the name
// it answers when a client sends none). Its admin endpoint is off, and
// everything it keeps (its autosaved configuration, its storage) is in
// its own directory.
func StartCaddy(ctx context.Context, at servers.Place, addrs []netip.Addr, name string, content servers.Content, gen servers.Generated, tls *servers.TLS) (*servers.Server, error) {
	bin, err := servers.LookPath("caddy")
	if err != nil {
		return nil, err
	}
	dir, err := at.Mkdir("caddy")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*servers.Server, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("caddy: %w", err)
	}
	if err := servers.WriteRoot(filepath.Join(dir, "www"), content, gen); err != nil {
		return fail(err)
	}
	cert, key, err := tls.Write(dir)
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
	s, err := servers.Start(ctx, "caddy", dir, "", at, netip.AddrPortFrom(addrs[0], uint16(tls.Port)), "/usr/bin/env",
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "HOME="+dir,
		bin, "run", "--config", cf)
	if err != nil {
		return nil, err
	}
	// Its TCP listener is up: its QUIC socket is bound beside it.
	if err := servers.WaitUDP(ctx, at.Prefix, netip.AddrPortFrom(addrs[0], uint16(tls.Port))); err != nil {
		s.Stop()
		return nil, fmt.Errorf("caddy: %w", err)
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
