// Package page finds what an HTML page embeds: the objects a browser
// fetches with it (images, scripts, stylesheets and icons, frames, media).
// The http protocol fetches those on the page's own host with the page;
// a survey (run/survey) fetches those on other hosts over each family.
//
// It imports nothing of v6lab.
package page

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Refs lists the references of page's embedded objects (img, script,
// iframe, embed, source, audio, video and its poster, input, stylesheet
// and icon links) in the order they appear, as written: neither resolved
// nor deduplicated. Empty references, data: URLs and fragments are left
// out.
func Refs(page []byte) []string {
	z := html.NewTokenizer(bytes.NewReader(page))
	var out []string
	add := func(ref string) {
		ref = strings.TrimSpace(ref)
		if ref != "" && !strings.HasPrefix(ref, "data:") && !strings.HasPrefix(ref, "#") {
			out = append(out, ref)
		}
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if !hasAttr {
				continue
			}
			attrs := map[string]string{}
			for {
				k, v, more := z.TagAttr()
				attrs[string(k)] = string(v)
				if !more {
					break
				}
			}
			switch string(name) {
			case "img", "script", "iframe", "embed", "source", "audio", "video", "input":
				add(attrs["src"])
				if string(name) == "video" {
					add(attrs["poster"])
				}
			case "link":
				for _, rel := range strings.Fields(strings.ToLower(attrs["rel"])) {
					if rel == "stylesheet" || rel == "icon" {
						add(attrs["href"])
						break
					}
				}
			}
		}
	}
}

// Objects resolves page's references against base, each once, at most
// max of them (max <= 0: no bound), keeping only http and https URLs;
// keep, when set, says which of those to keep.
func Objects(page []byte, base *url.URL, max int, keep func(*url.URL) bool) []*url.URL {
	seen := map[string]bool{}
	var out []*url.URL
	for _, ref := range Refs(page) {
		u, err := base.Parse(ref)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		u.Fragment = ""
		if seen[u.String()] || (keep != nil && !keep(u)) {
			continue
		}
		if max > 0 && len(out) >= max {
			break
		}
		seen[u.String()] = true
		out = append(out, u)
	}
	return out
}

// SameHost says whether u is on base's scheme, host and port: fetched
// over the page's own connection.
func SameHost(base, u *url.URL) bool { return u.Scheme == base.Scheme && u.Host == base.Host }
