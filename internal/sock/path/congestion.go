package path

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CheckCongestion says whether this kernel can give a TCP socket
// congestion control cc: it is available (loaded), or its module is
// there to load when a socket asks for it.
func CheckCongestion(cc string) error {
	avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if slices.Contains(strings.Fields(string(avail)), cc) {
		return nil
	}
	if uname, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		mods, _ := filepath.Glob(filepath.Join("/lib/modules", strings.TrimSpace(string(uname)), "kernel/net/ipv4", "tcp_"+cc+".ko*"))
		if len(mods) > 0 {
			return nil
		}
	}
	return fmt.Errorf("congestion control %q is not available in this kernel (available: %s)", cc, strings.TrimSpace(string(avail)))
}
