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
	nginx, unbound, proftpd := Program{Name: "nginx", Package: "nginx-light"}, Program{Name: "unbound", Package: "unbound"}, Program{Name: "proftpd", Package: "proftpd-core"}
	err := CheckInstalled([]Program{nginx, unbound, proftpd, {Name: "postfix", Package: "postfix"}, proftpd})
	want := "servers: real servers not installed: unbound, proftpd; install them with scripts/install-deps --real (or apt-get install unbound proftpd-core)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrMissing) {
		t.Errorf("got %v\nwant %s", err, want)
	}
	look = func(p string) (string, error) { return "/usr/sbin/" + p, nil }
	if err := CheckInstalled([]Program{nginx, {Name: "dovecot", Package: "dovecot-imapd"}}); err != nil {
		t.Errorf("all installed: %v", err)
	}
}
