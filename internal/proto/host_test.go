package proto

import "testing"

// TestCheckHost: IP addresses and DNS host names pass; anything else is
// refused (trial 9).
func TestCheckHost(t *testing.T) {
	for _, h := range []string{"example.org", "example.org.", "_dmarc.x-y.test", "192.0.2.1", "2001:db8::1", "bücher.example", "localhost"} {
		if err := CheckHost(h); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
	long := ""
	for range 64 {
		long += "a"
	}
	for _, h := range []string{";id", "a..b", ".", "", "a b", "x/y", long + ".org", "$(id)"} {
		if err := CheckHost(h); err == nil {
			t.Errorf("%q passed", h)
		}
	}
}
