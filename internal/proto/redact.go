package proto

import "strings"

// Mask stands for a secret in what v6lab records (a url's password, an
// option tagged secret).
const Mask = "xxxxx"

// Secrets names o's secret options that hold a value other than their
// default: the ones a record masks.
func Secrets(o any) []string {
	var out []string
	for _, f := range Fields(o) {
		if t := f.Text(); f.Secret && t != "" && t != f.Default {
			out = append(out, f.Name)
		}
	}
	return out
}

// MaskedSecret is the first of o's secret options that a record masked
// (its value is Mask), or "".
func MaskedSecret(o any) string {
	for _, f := range Fields(o) {
		if f.Secret && f.Text() == Mask {
			return f.Name
		}
	}
	return ""
}

// RedactArgs is a command line as results record it: every url's password
// and the value of every flag in secret (names without dashes) masked.
func RedactArgs(args []string, secret map[string]bool) []string {
	out := make([]string, len(args))
	maskNext := false
	for i, a := range args {
		switch {
		case maskNext:
			out[i], maskNext = Mask, false
			continue
		case strings.HasPrefix(a, "-"):
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if secret[name] {
				if hasValue {
					out[i] = a[:strings.Index(a, "=")+1] + Mask
				} else {
					out[i], maskNext = a, true
				}
				continue
			}
		}
		out[i] = Redact(a)
	}
	return out
}
