package survey

import (
	"fmt"
	"strings"
)

// Exclusion is the names a survey never contacts, as robots.txt asks of
// crawlers: a name excludes itself and every name under it.
type Exclusion map[string]bool

// MaxExcluded bounds an exclusion list (it is held whole).
const MaxExcluded = 1 << 20

// ReadExclusion reads an exclusion list: one name a line (blank lines and
// # comments skipped), or none when name is empty. A line that is not a
// host name is an error naming the file and line: a typo there must not
// let a site be contacted that asked not to be.
func ReadExclusion(name string) (Exclusion, error) {
	x := Exclusion{}
	if name == "" {
		return x, nil
	}
	f, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bad error
	err = eachLine(f, func(n int, line []byte) bool {
		s := strings.TrimSpace(string(line))
		if s, _, _ = strings.Cut(s, "#"); strings.TrimSpace(s) == "" {
			return true
		}
		s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
		if err := CheckName(s); err != nil {
			bad = fmt.Errorf("survey: %s:%d: exclude: %v", name, n, err)
			return false
		}
		if len(x) >= MaxExcluded {
			bad = fmt.Errorf("survey: %s:%d: exclude: more than %d names", name, n, MaxExcluded)
			return false
		}
		x[s] = true
		return true
	})
	if err == nil {
		err = bad
	}
	return x, err
}

// Excludes says which listed name excludes host (itself, or a name it is
// under), or "".
func (x Exclusion) Excludes(host string) string {
	for h := host; h != ""; {
		if x[h] {
			return h
		}
		_, rest, ok := strings.Cut(h, ".")
		if !ok {
			break
		}
		h = rest
	}
	return ""
}
