package page

import (
	"net/url"
	"strings"
	"testing"
)

func TestObjectsResolvesDedupesAndKeeps(t *testing.T) {
	body := []byte(`<html><head><link rel="Stylesheet" href="/a.css"><link rel=preload href=/skip.js>
<link rel="shortcut icon" href="favicon.ico"></head><body>
<img src="data:image/png;base64,AAAA"><img src="#top"><img src=" /a.css ">
<script src="https://cdn.example/x.js#frag"></script><script src="//cdn.example/x.js"></script>
<video src="v.mp4" poster="p.jpg"></video><iframe src="ftp://old.example/f"></iframe>
<img src="http://other.example:8080/i.png"></body></html>`)
	base, _ := url.Parse("https://site.example/dir/page.html")
	var got []string
	for _, u := range Objects(body, base, 0, nil) {
		got = append(got, u.String())
	}
	want := "https://site.example/a.css https://site.example/dir/favicon.ico https://cdn.example/x.js https://site.example/dir/v.mp4 https://site.example/dir/p.jpg http://other.example:8080/i.png"
	if strings.Join(got, " ") != want {
		t.Errorf("objects:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	other := Objects(body, base, 0, func(u *url.URL) bool { return !SameHost(base, u) })
	if len(other) != 2 || other[0].Host != "cdn.example" || other[1].Host != "other.example:8080" {
		t.Errorf("other hosts: %v", other)
	}
	if n := len(Objects(body, base, 2, nil)); n != 2 {
		t.Errorf("at most 2: %d", n)
	}
	if refs := Refs([]byte("<p>no objects</p><img>")); len(refs) != 0 {
		t.Errorf("refs %q", refs)
	}
}
