package extclient

import (
	"errors"
	"net/url"
	"slices"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// OptClient is the option that picks another client program.
const OptClient = "client"

// Choice is the option of a file cell that downloads with another client
// program instead of v6lab's own.
type Choice struct {
	Client string `json:"client,omitempty" opt:"client,fileonly"`
	// EyeballsTimeout, when set, is given to curl on the dual path as its
	// --happy-eyeballs-timeout-ms (the cell's attempt_delay, when given;
	// not an option of its own).
	EyeballsTimeout time.Duration `json:"-"`
}

// External reports whether a cell downloads with another program.
func (c *Choice) External() bool { return c.Client != "" && c.Client != "v6lab" }

// Check checks the client of a cell that fetches file (or, with where:
// hosts, url): v6lab (its own), curl or wget.
func (c *Choice) Check(file, url string) error {
	if c.Client == "" {
		return nil
	}
	if c.Client != "v6lab" && !slices.Contains(Programs, c.Client) {
		return proto.Errorf(OptClient, "%q: want v6lab, curl or wget", c.Client)
	}
	if c.External() && file == "" && url == "" {
		return proto.Errorf(OptClient, "%s downloads a file: give the cell a file (or, with where: hosts, a url)", c.Client)
	}
	return nil
}

// Timing says how a cell's downloads by another program are timed, ""
// for v6lab's own client.
func (c *Choice) Timing() string {
	switch {
	case !c.External():
		return ""
	case c.Client == "wget":
		return "timing (client wget): v6lab's lookup, then wget's whole run as this process waits for it, the program's start-up (about a millisecond) included; no phases, no wire_ns"
	}
	return "timing (client curl): v6lab's lookup, then curl's own timers (--write-out time_connect, time_starttransfer, time_total), which start when curl does, after its start-up; no wire_ns"
}

// Probe is a curl or wget download of u (a cell's file, or its url), over
// path p from ep's source, the name resolved as ep says; lookupName, when
// set, is looked up in place of u's host (the dual path's late AAAA);
// expect is the file's size when v6lab's server generates it (0: unknown).
func (c *Choice) Probe(ep proto.Endpoint, u *url.URL, p path.Path, lookupName string, expect int64) (load.Probe, error) {
	if err := Check(c.Client); err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errors.New("no server to download from")
	}
	cl := &Client{Program: c.Client, URL: u, Path: p, Resolver: ep.Resolver(), Source: ep.Source, LookupName: lookupName, Expect: expect, AttemptDelay: c.EyeballsTimeout}
	return proto.Bulk(cl), nil
}
