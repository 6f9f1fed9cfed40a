package inlab

import (
	"context"
	"maps"

	contentpkg "v6lab/internal/gen/content"
	"v6lab/internal/lab"
	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/run/experiment"
)

// CheckReal names every missing real server program of a run at once,
// before a lab is built.
func CheckReal(exp *experiment.Experiment) error {
	var need []servers.Program
	for _, p := range exp.RealServers() {
		need = append(need, p.Real.Programs(exp.RealCells(p.Name), exp.RealPaths())...)
	}
	return servers.CheckInstalled(need)
}

// startReal starts the real servers of a run (RealProtocols) in the lab's
// server namespace, each given the cells that measure it, and adds their
// endpoints (keys real/PROTOCOL) to the job.
func startReal(ctx context.Context, l *lab.Lab, exp *experiment.Experiment, job *Job) (_ func(), err error) {
	if err := CheckReal(exp); err != nil { // all checked before any starts
		return nil, err
	}
	at := proto.RealPlace{Place: experiment.LabPlace(l), Sources: experiment.LabSources(l),
		Daemon: servers.Place{Prefix: []string{"ip", "netns", "exec", lab.NS(l.Name, lab.Server)}, Rec: l.Record()},
		Paths:  exp.RealPaths()}
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
	content := map[string]contentpkg.Expect{}
	pins := map[string]string{}
	for _, p := range exp.RealServers() {
		at.Cells = exp.RealCells(p.Name)
		run, err := p.Real.Start(ctx, at)
		if err != nil {
			return nil, err
		}
		stops = append(stops, run.Stop)
		if len(run.HTTPS) > 0 { // for the real DNS server's HTTPS records
			if at.HTTPS == nil {
				at.HTTPS = map[int][]string{}
			}
			maps.Copy(at.HTTPS, run.HTTPS)
		}
		key := "real/" + p.Name
		ports[key] = p.Real.Port
		content[key] = run.Content
		for k, port := range run.Ports { // the servers it answers as beside
			ports["real/"+k] = port
			content["real/"+k] = run.Content
		}
		for k, pin := range run.Pins {
			pins["real/"+k] = pin
		}
		maps.Copy(job.Servers, run.About)
		if len(run.Roles) > 0 {
			if job.ServerRoles == nil {
				job.ServerRoles = map[string][]string{}
			}
			maps.Copy(job.ServerRoles, run.Roles)
		}
	}
	// Each server's files hold what it says (v6lab's generated content
	// unless it says otherwise: ProFTPD's sparse files read as zeros).
	eps := all.PlaceEndpoints(at.Place, ports, at.Sources, contentpkg.Generated, "real/")
	for key, byPath := range eps {
		for p, ep := range byPath {
			if c := content[key]; c != contentpkg.Unknown {
				ep.Content = c
			}
			ep.CertSHA256 = pins[key]
			job.Endpoints.Set(key, p, ep)
		}
	}
	return stop, nil
}
