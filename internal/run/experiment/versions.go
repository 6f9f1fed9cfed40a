package experiment

import (
	"slices"

	"v6lab/internal/input/specfile"
)

// versionList is a cell's http_version: one version, or a list that
// expands to one cell group per version (docs/experiments.md).
type versionList []string

// OneOrMany lets the file give one version without a list.
func (versionList) OneOrMany() {}

// versionsOf expands a cell of the file: itself, or one copy per HTTP
// version it lists, each with that version alone.
func (c cellFile) versionsOf(doc *specfile.Doc, at string) ([]cellFile, error) {
	if len(c.HTTPVersion) <= 1 {
		return []cellFile{c}, nil
	}
	var out []cellFile
	for i, v := range c.HTTPVersion {
		if slices.Contains(c.HTTPVersion[:i], v) {
			return nil, doc.Errorf(at+".http_version", "%s is listed twice", v)
		}
		cv := c
		cv.HTTPVersion, cv.expanded = versionList{v}, true
		out = append(out, cv)
	}
	return out, nil
}

// version is the cell's one HTTP version as given ("": none).
func (c *cellFile) version() string {
	if len(c.HTTPVersion) == 0 {
		return ""
	}
	return c.HTTPVersion[0]
}

// versionLabel names a cell group that gives its HTTP version (v, as its
// protocol's Check normalised it: 1.1, 2 or 3; tls as Check completed
// it): its label, or http (https with tls) for 1.1, with /2 after it for
// HTTP/2 (h2 over TLS), /h2c for HTTP/2 in the clear, and /3 for HTTP/3,
// so the versions of one cell read as one family in reports: http,
// http/2, http/3.
func (c *cellFile) versionLabel(v string, tls bool) string {
	base := c.Label
	if base == "" {
		base = c.Protocol
		if tls && v == "1.1" {
			base = "https"
		}
	}
	switch {
	case v == "2" && !tls:
		return base + "/h2c"
	case v == "2" || v == "3":
		return base + "/" + v
	}
	return base
}
