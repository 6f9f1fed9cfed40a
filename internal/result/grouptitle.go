package result

import (
	"strings"
	"unicode"
)

// GroupTitle is what reports call a cell group whose samples are labelled
// group and whose spec names the HTTP version (http_version: 1.1, 2 or
// 3): upper case with the version ("HTTP/1.1", "HTTP/2", "WEB/3"), and
// " (h2c)" after it when the group spoke HTTP/2 in the clear (h2c: its
// name's tag, LABEL/h2c, never "LABEL/H2C", or a single version's cell
// without TLS); upper case alone without a version. A name that already
// ends in its version after a letter (h2 of HTTP/2, api3 of HTTP/3) does
// not get it again: "H2", "API3". One rule for the protocol's names and
// labels alike (docs/metrics.md's table): a label kept with one version,
// web of HTTP/2, is "WEB/2", as a list's web/2 is, and web of h2c "WEB/2
// (h2c)", as a list's web/h2c. Tables are titled by it, and notes that
// name a versioned group call it so (GroupCalled), so that a probe's
// group http of HTTP/2 reads "HTTP/2" in both (trial7 F8).
func GroupTitle(group, version string, h2c bool) string {
	if version == "" {
		return strings.ToUpper(group)
	}
	label, tag, cut := strings.Cut(group, "/")
	title := strings.ToUpper(label)
	if !endsInVersion(label, version) {
		title += "/" + version
	}
	if version == "2" && (h2c || cut && tag == "h2c") {
		title += " (h2c)"
	}
	return title
}

// endsInVersion: label ends in version after a letter (h2 and 2, api3
// and 3, web1.1 and 1.1; not x12 and 2, nor 2 and 2).
func endsInVersion(label, version string) bool {
	head, ok := strings.CutSuffix(label, version)
	if !ok || head == "" {
		return false
	}
	r := []rune(head)
	return unicode.IsLetter(r[len(r)-1])
}

// GroupCalled is what a note calls a cell group: its title (GroupTitle)
// when its spec names an HTTP version, else its label as the samples
// write it ("udp", "dns").
func GroupCalled(group, version string, h2c bool) string {
	if version == "" {
		return group
	}
	return GroupTitle(group, version, h2c)
}
