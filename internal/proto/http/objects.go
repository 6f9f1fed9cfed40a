package http

import (
	"net/url"

	"v6lab/internal/proto/page"
)

// Objects lists the embedded objects of an HTML page that a browser would
// fetch with it (page.Refs: img, script, stylesheet and icon links,
// iframe, embed, source, video poster), resolved against base and kept
// only when they are on the same scheme, host and port. Each is returned
// once, as a request URI, at most MaxObjects of them.
func Objects(body []byte, base *url.URL) []string {
	var out []string
	for _, u := range page.Objects(body, base, MaxObjects, func(u *url.URL) bool { return page.SameHost(base, u) }) {
		out = append(out, u.RequestURI())
	}
	return out
}
