package extclient

import (
	"errors"
	"net/url"
	"slices"
	"strings"

	"v6lab/internal/gen/load"
	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// OptClient is the option that picks another client program.
const OptClient = "client"

// CheckClient checks a file cell's client: v6lab (its own), curl or wget.
func CheckClient(o *proto.Options) error {
	if o.Client == "" {
		return nil
	}
	if o.Client != "v6lab" && !slices.Contains(Programs, o.Client) {
		return proto.Errorf(OptClient, "%q: want v6lab, curl or wget", o.Client)
	}
	if o.Client != "v6lab" && o.File == "" && o.URL == "" {
		return proto.Errorf(OptClient, "%s downloads a file: give the cell a file (or, with where: hosts, a url)", o.Client)
	}
	if o.Client != "v6lab" && o.Active {
		return proto.Errorf("active", "active mode is v6lab's own FTP client's option")
	}
	return nil
}

// External reports whether a cell downloads with another program.
func External(o *proto.Options) bool { return o.Client != "" && o.Client != "v6lab" }

// Timing says how a cell's downloads by another program are timed
// (proto.Timed), "" for v6lab's own client.
func Timing(o *proto.Options) string {
	switch {
	case !External(o):
		return ""
	case o.Client == "wget":
		return "timing (client wget): v6lab's lookup, then wget's whole run as this process waits for it, the program's start-up (about a millisecond) included; no phases, no wire_ns"
	}
	return "timing (client curl): v6lab's lookup, then curl's own timers (--write-out time_connect, time_starttransfer, time_total), which start when curl does, after its start-up; no wire_ns"
}

// ExternalProbe is a curl or wget download of u (a cell's file, or its
// url), over path p from ep's source, the name resolved as ep says.
func ExternalProbe(o *proto.Options, ep proto.Endpoint, u *url.URL, p path.Path) (load.Probe, error) {
	if err := Check(o.Client); err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errors.New("no server to download from")
	}
	c := &Client{Program: o.Client, URL: u, Path: p, Resolver: ep.Resolver(), Source: ep.Source}
	if o.AAAADelay != "" {
		c.LookupName = proto.AAAADelayLabel + o.AAAADelay + "." + u.Hostname()
	}
	if o.URL == "" { // v6lab's own file: its size is its name
		if size, err := units.ParseSize(strings.TrimPrefix(o.File, "/")); err == nil {
			c.Expect = size
		}
	}
	return proto.Bulk(c), nil
}
