package servers

import (
	"errors"
	"strings"
	"testing"
)

func TestMissingProgramNamesThePackage(t *testing.T) {
	err := CheckInstalled([]Program{{Name: "no-such-server-v6lab", Package: "no-such-package"}})
	if err == nil || !strings.Contains(err.Error(), "apt-get install no-such-package") || !errors.Is(err, ErrMissing) {
		t.Errorf("%v", err)
	}
}

// TestMissingServersAreNamedAtOnce: every missing daemon, its package and
// the install script in one error.
func TestMissingServersAreNamedAtOnce(t *testing.T) {
	defer func(f func(string) (string, error)) { look = f }(look)
	look = func(p string) (string, error) {
		if p == "unbound" || p == "proftpd" {
			return "", ErrMissing
		}
		return "/usr/sbin/" + p, nil
	}
	nginx, unbound, proftpd := Program{"nginx", "nginx-light"}, Program{"unbound", "unbound"}, Program{"proftpd", "proftpd-core"}
	err := CheckInstalled([]Program{nginx, unbound, proftpd, {"postfix", "postfix"}, proftpd})
	want := "servers: real servers not installed: unbound, proftpd; install them with scripts/install-deps --real (or apt-get install unbound proftpd-core)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrMissing) {
		t.Errorf("got %v\nwant %s", err, want)
	}
	look = func(p string) (string, error) { return "/usr/sbin/" + p, nil }
	if err := CheckInstalled([]Program{nginx, {"dovecot", "dovecot-imapd"}}); err != nil {
		t.Errorf("all installed: %v", err)
	}
}
