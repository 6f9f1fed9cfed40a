package experiment

import (
	"slices"
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
	rests, values, err := c.Options.Split(doc, versionKey)
	if err != nil || rests == nil {
		return []cellFile{c}, err
	}
	out := make([]cellFile, len(rests))
	for i, r := range rests {
		out[i] = c
		out[i].Options, out[i].expanded = r, true
		out[i].list = &versionList{values: values, rests: rests, at: i}
	}
	return out, nil
}

// versionList is the list of versions a cell gave: each as written, the
// cell's options with each, and which one this group is.
type versionList struct {
	values []string
	rests  []specfile.Rest
	at     int
}

// listedErr is oe said of the one version of the cell's list it is about,
// when another version of the list passes the check: "give http_version:
// 2" would ask for a version the list already has. nil: the cell lists no
// versions, oe asks for nothing (it says what to do itself), or no
// version passes (oe as it stands is right).
func (r *cellReader) listedErr(oe *proto.OptionError) error {
	l := r.c.list
	if l == nil || oe.Give == nil || oe.Option == versionKey || !slices.ContainsFunc(l.rests, r.passes) {
		return nil
	}
	v := l.values[l.at]
	list := "[" + strings.Join(l.values, ", ") + "]"
	if oe.Give.Option != versionKey {
		// The fix it names (give tls too) would do for every version.
		return r.doc.Errorf(r.field(oe.Option), "with http_version %s of the cell's list %s, %v, or drop %s from the list, or give it a cell of its own without %s",
			v, list, oe.Err, v, oe.Option)
	}
	why := oe.Reason
	if oe.Give.Why != "" {
		why += " (" + oe.Give.Why + ")"
	}
	return r.doc.Errorf(r.field(oe.Option), "does not apply to http_version %s of the cell's list %s: %s; drop %s from the list, or give it a cell of its own without %s",
		v, list, why, v, oe.Option)
}

// passes says whether the cell's options, with rest for its own, pass
// their protocol's check.
func (r *cellReader) passes(rest specfile.Rest) bool {
	o := r.pr.New()
	if r.doc.DecodeRest(rest, o, func(string) string { return "" }) != nil {
		return false
	}
	o.Base().RacesFamilies = r.s.RacesFamilies()
	return o.Check(r.e.Where, func(opt string) bool { return r.doc.Has(r.field(opt)) }) == nil
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
