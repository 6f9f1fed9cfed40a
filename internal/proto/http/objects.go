package http

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Objects lists the embedded objects of an HTML page that a browser would
// fetch with it (img, script, stylesheet and icon links, iframe, embed,
// source, video poster), resolved against base and kept only when they are
// on the same scheme, host and port. Each is returned once, as a request
// URI, at most MaxObjects of them.
func Objects(page []byte, base *url.URL) []string {
	z := html.NewTokenizer(bytes.NewReader(page))
	seen := map[string]bool{}
	var out []string
	add := func(ref string) {
		ref = strings.TrimSpace(ref)
		if ref == "" || strings.HasPrefix(ref, "data:") || strings.HasPrefix(ref, "#") {
			return
		}
		u, err := base.Parse(ref)
		if err != nil || u.Scheme != base.Scheme || u.Host != base.Host {
			return
		}
		uri := u.RequestURI()
		if seen[uri] || len(out) >= MaxObjects {
			return
		}
		seen[uri] = true
		out = append(out, uri)
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
