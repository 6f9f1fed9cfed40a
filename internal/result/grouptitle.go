package result

import "strings"

// GroupTitle is what reports call a cell group whose samples are labelled
// group and whose spec names the HTTP version (http_version: 1.1, 2 or
// 3): upper case with the version ("HTTP/1.1", "HTTP/2", "WEB/3"), the h2c
// group LABEL/h2c "LABEL/2 (h2c)", never "LABEL/H2C"; upper case alone
// without a version. One rule for the protocol's names and labels alike
// (docs/metrics.md's table): a label kept with one version, web of
// HTTP/2, is "WEB/2", as a list's web/2 is. Tables are titled by it, and notes that name a
// versioned group call it so (GroupCalled), so that a probe's group http
// of HTTP/2 reads "HTTP/2" in both (trial7 F8).
func GroupTitle(group, version string) string {
	switch label, tag, cut := strings.Cut(group, "/"); {
	case version == "":
		return strings.ToUpper(group)
	case cut && tag == "h2c":
		return strings.ToUpper(label) + "/" + version + " (h2c)"
	case !cut:
		return strings.ToUpper(group) + "/" + version
	}
	return strings.ToUpper(group)
}

// GroupCalled is what a note calls a cell group: its title (GroupTitle)
// when its spec names an HTTP version, else its label as the samples
// write it ("udp", "dns").
func GroupCalled(group, version string) string {
	if version == "" {
		return group
	}
	return GroupTitle(group, version)
}
