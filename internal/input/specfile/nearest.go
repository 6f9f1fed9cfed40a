package specfile

import (
	"fmt"
	"strings"
)

// Nearest is the one of known closest to word, a key or flag that is
// none of them, when it is close enough to be a typo of it: one edit
// (a letter added, dropped, changed, or two swapped) for a word of up to
// four letters, two for a longer one. ok false: none is.
func Nearest(word string, known []string) (string, bool) {
	limit := 2
	if len([]rune(word)) <= 4 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, k := range known {
		if d := editDistance(word, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best, best != ""
}

// UnknownField is the error of key, which is none of known: the known
// one it is likely a typo of, if any, and all of them.
func UnknownField(key string, known []string) string {
	guess := ""
	if k, ok := Nearest(key, known); ok {
		guess = fmt.Sprintf(": did you mean %s?", k)
	}
	return fmt.Sprintf("unknown field%s (known here: %s)", guess, strings.Join(known, ", "))
}

// editDistance counts the edits from a to b: a letter inserted, deleted
// or changed, or two neighbours swapped (optimal string alignment).
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
