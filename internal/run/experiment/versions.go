package experiment

import (
	"strings"

	"v6lab/internal/input/specfile"
	"v6lab/internal/proto"
)

// A cell of the file that lists its HTTP versions (http_version: [1.1, 2,
// 3]) is one cell group per version, each labelled after its version so
// the versions of one cell read as one family in reports (docs/
// experiments.md).

// versionKey is the option that may list values.
const versionKey = "http_version"

// versions expands a cell of the file: itself, or one copy per version it
// lists, each with that version alone.
func (c cellFile) versions(doc *specfile.Doc) ([]cellFile, error) {
	rests, _, err := c.Options.Split(doc, versionKey)
	if err != nil || rests == nil {
		return []cellFile{c}, err
	}
	out := make([]cellFile, len(rests))
	for i, r := range rests {
		out[i] = c
		out[i].Options, out[i].expanded = r, true
	}
	return out, nil
}

// versionLabel names a group whose options give their HTTP version (as
// its protocol's Check normalised it: 1.1, 2 or 3), unless the file's cell
// gave it a label and one version alone: the label, or http (https with
// tls) for 1.1, with /2 after it for HTTP/2 over TLS, /h2c for HTTP/2 in
// the clear, /3 for HTTP/3: http, http/2, http/3. A cell speaks TLS when
// its tls option says so (v6lab's own server) or its url is https://
// (where: hosts: the scheme decides, trial7 F2). ok false: the options
// give no version.
func (c *cellFile) versionLabel(o proto.Options) (string, bool) {
	v, has := proto.FieldOf(o, versionKey)
	if !has || v.Text() == "" || (c.Label != "" && !c.expanded) {
		return "", false
	}
	version := v.Text()
	base := c.Label
	if base == "" {
		base = c.Protocol
		if ownTLS(o) && version == "1.1" {
			base = "https"
		}
	}
	switch {
	case inClear2(o):
		return base + "/h2c", true
	case version == "2" || version == "3":
		return base + "/" + version, true
	}
	return base, true
}

// ownTLS: the options' tls (v6lab's own server's) is on.
func ownTLS(o proto.Options) bool {
	t, ok := proto.FieldOf(o, "tls")
	return ok && t.Text() == "true"
}

// inClear2: the options ask for HTTP/2 in the clear (h2c, by prior
// knowledge): http_version 2, no tls, no https url.
func inClear2(o proto.Options) bool {
	v, ok := proto.FieldOf(o, versionKey)
	return ok && v.Text() == "2" && !ownTLS(o) && !httpsURL(o)
}

// httpsURL: the options' url (where: hosts) is https://.
func httpsURL(o proto.Options) bool {
	u, ok := proto.FieldOf(o, proto.OptURL)
	return ok && strings.HasPrefix(strings.ToLower(u.Text()), "https://")
}
