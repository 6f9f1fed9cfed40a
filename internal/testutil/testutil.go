// Package testutil holds what v6lab's tests share: the skip of a root-only
// test, and in its folders test servers (servetest) and one transaction of
// a protocol as a cell runs it (prototest). Only tests import it.
package testutil

import (
	"os"
	"testing"
)

// RequireRoot skips a test (or benchmark) that needs root, saying why
// (CI runs as root, so it runs there).
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skipf("%s (CI runs as root)", why)
	}
}
