package stats

import "fmt"

// Count is n things in the singular or the plural, as reports say counts:
// "1 site", "2 sites", "0 sites" (what takes an s).
func Count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
