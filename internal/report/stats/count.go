package stats

import "fmt"

// Count is n things in the singular or the plural, as reports say counts:
// "1 site", "2 sites", "0 sites" (what takes an s).
func Count[N ~int | ~int64 | ~uint64](n N, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// CountOf is k of n things, the noun agreeing with n: "1 of 1 run", "2 of
// 3 runs".
func CountOf(k, n int, what string) string {
	return fmt.Sprintf("%d of %s", k, Count(n, what))
}
