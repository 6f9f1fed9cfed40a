package main

// What the first trial of a new user found (the trial's numbering), each
// held by a test.

import (
	"strings"
	"testing"
)

// TestUnknownSubcommandIsBadInput (4): an argument naming no subcommand of
// serve, probe or lab is bad input (exit 2) naming it and the valid ones;
// it printed the help and exited 0. Alone, the group still prints its help.
func TestUnknownSubcommandIsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "gopher"}, `unknown command "gopher" for "v6lab serve" (want dns, ftp, http, imap, smtp, traffic, transport)`},
		{[]string{"probe", "gopher", "x"}, `unknown command "gopher" for "v6lab probe" (want dns, ftp, http, imap, smtp)`},
		{[]string{"lab", "frob"}, `unknown command "frob" for "v6lab lab" (want down, status, up)`},
	} {
		_, err := v6lab(t, c.args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (exit %d), want %q", c.args, err, exitCode(err), c.want)
		}
	}
	for _, group := range []string{"serve", "probe", "lab"} {
		out, err := v6lab(t, group)
		if err != nil || !strings.Contains(out, "Available Commands:") {
			t.Errorf("%s alone: %v\n%s", group, err, out)
		}
	}
}
