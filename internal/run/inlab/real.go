package inlab

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	contentpkg "v6lab/internal/gen/content"
	"v6lab/internal/input/units"
	"v6lab/internal/lab"
	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/run/experiment"
)

// Real servers' ports in the server namespace, free there.
var realPorts = map[string]int{"http": 80, "dns": 53, "ftp": 21, "smtp": 25, "imap": 143}

// startReal starts nginx and Unbound (the page and its name) in the lab's
// server namespace, and the other real servers the cells ask for, and adds
// their endpoints (keys real/PROTOCOL) to the job.
func startReal(ctx context.Context, l *lab.Lab, exp *experiment.Experiment, job *Job) (_ func(), err error) {
	want := append([]string{"http", "dns"}, exp.RealProtocols()...)
	if err := servers.CheckInstalled(want); err != nil { // all checked before any starts
		return nil, err
	}
	a := l.Addr
	place := servers.Place{Prefix: []string{"ip", "netns", "exec", lab.NS(l.Name, lab.Server)}, Rec: l.Record()}
	at := experiment.LabPlace(l)
	addrs := at.Listen()
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() { // one that fails stops those started before it
		if err != nil {
			stop()
		}
	}()
	ports := map[string]int{}
	// started records a daemon that started: its stop, port and description.
	started := func(proto string, srv *servers.Server, err error, about string) error {
		if err != nil {
			return err
		}
		stops = append(stops, srv.Stop)
		ports["real/"+proto] = realPorts[proto]
		job.Servers[proto+" (real)"] = srv.Version + " in the server namespace" + about
		return nil
	}
	files, gen, err := nginxContent(exp)
	if err != nil {
		return nil, err
	}
	ng, err := servers.StartNginx(ctx, place, addrs, realPorts["http"], files, gen)
	if err = started("http", ng, err, ""); err != nil {
		return nil, err
	}
	// The nat64 path's lookups go to a DNS64 resolver of their own.
	plain := slices.DeleteFunc(slices.Clone(addrs), func(x netip.Addr) bool { return x == a.DNS64 })
	// As the embedded server: the name with both families (the tunnel's
	// clients get its address as the AAAA), and the IPv4-only name.
	v4only := servers.Record{Name: proto.V4OnlyName, Addr: a.ServerV4}
	ub, err := servers.StartUnbound(ctx, place, plain, realPorts["dns"], "v6lab.test",
		[]servers.Record{{Name: experiment.LocalName, Addr: a.ServerV4}, {Name: experiment.LocalName, Addr: a.ServerV6}, v4only},
		[]servers.View{{Name: "tunnel", Clients: netip.PrefixFrom(a.ClientTun6, 64).Masked(),
			Records: []servers.Record{{Name: experiment.LocalName, Addr: a.ServerV4}, {Name: experiment.LocalName, Addr: a.ServerTun6}, v4only}}})
	if err = started("dns", ub, err, ", a view for the tunnel's clients"); err != nil {
		return nil, err
	}
	if a.DNS64.IsValid() {
		d64, err := servers.StartUnboundDNS64(ctx, place, a.DNS64, realPorts["dns"], "v6lab.test",
			[]servers.Record{{Name: experiment.LocalName, Addr: a.ServerV4}, v4only}, lab.Nat64Prefix)
		if err != nil {
			return nil, err
		}
		stops = append(stops, d64.Stop)
		job.Servers["dns64 (real)"] = fmt.Sprintf("%s in the server namespace on %s: its dns64 module synthesises AAAA under %s for the nat64 path (the name as an IPv4-only host has it)", d64.Version, a.DNS64, lab.Nat64Prefix)
	}
	if slices.Contains(exp.RealProtocols(), "ftp") {
		files, err := ftpFiles(exp)
		if err != nil {
			return nil, err
		}
		pf, err := servers.StartProFTPD(ctx, place, addrs, realPorts["ftp"], files)
		if err = started("ftp", pf, err, ", anonymous, sparse files"); err != nil {
			return nil, err
		}
	}
	if slices.Contains(exp.RealProtocols(), "smtp") {
		pf, err := servers.StartPostfix(ctx, place, addrs, realPorts["smtp"], "v6lab.test")
		if err = started("smtp", pf, err, ", an instance of its own; accepted mail is discarded"); err != nil {
			return nil, err
		}
	}
	if slices.Contains(exp.RealProtocols(), "imap") {
		most := 0
		for _, c := range exp.Cells {
			if c.Protocol == "imap" {
				most = max(most, c.Users)
			}
		}
		users, password, message := all.MustGet("imap").(proto.RealMailboxes).RealMailboxes(most)
		dv, err := servers.StartDovecot(ctx, place, addrs, realPorts["imap"], users, password, message)
		if err = started("imap", dv, err, fmt.Sprintf(", %d Maildir users", users)); err != nil {
			return nil, err
		}
	}
	// nginx serves v6lab's generated content; ProFTPD sparse files, which
	// read as zeros.
	eps := all.PlaceEndpoints(at, ports, experiment.LabSources(l), contentpkg.Generated, "real/")
	for p, ep := range eps["real/ftp"] {
		ep.Content = contentpkg.Zeros
		eps["real/ftp"][p] = ep
	}
	for key, byPath := range eps {
		for p, ep := range byPath {
			job.Endpoints.Set(key, p, ep)
		}
	}
	return stop, nil
}

// nginxContent is what the embedded HTTP server would serve a run's
// cells: its page and objects, and, generated to disk once in chunks, the
// files of http file cells at its paths and the small one Settle fetches.
func nginxContent(exp *experiment.Experiment) (servers.Content, servers.Generated, error) {
	rf := all.MustGet("http").(proto.RealFiles)
	gen := servers.Generated{}
	sizes := []string{SettleFile}
	for _, c := range exp.Cells {
		if c.Protocol == "http" && c.Server == "real" && c.File != "" {
			sizes = append(sizes, c.File)
		}
	}
	for _, name := range sizes {
		name = strings.TrimPrefix(name, "/")
		size, err := units.ParseSize(name)
		if err != nil {
			return nil, nil, err
		}
		gen[rf.FileDir()+name] = servers.GeneratedFile{Size: size, Fill: contentpkg.Fill}
	}
	return servers.Content(rf.RealFiles()), gen, nil
}

// ftpFiles are the sparse files ProFTPD serves: each ftp cell's, and
// Settle's.
func ftpFiles(exp *experiment.Experiment) (map[string]int64, error) {
	files := map[string]int64{strings.TrimPrefix(SettleFile, "/"): 1 << 10}
	for _, c := range exp.Cells {
		if c.Protocol == "ftp" && c.Server == "real" {
			name := strings.TrimPrefix(proto.Or(c.File, "1M"), "/")
			size, err := units.ParseSize(name)
			if err != nil {
				return nil, err
			}
			files[name] = size
		}
	}
	return files, nil
}
