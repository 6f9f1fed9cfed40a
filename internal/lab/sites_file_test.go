package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteOwnNeverWritesThroughALink: the client's resolv.conf is made
// anew; a symbolic link there (to a file it would clobber) or a file
// someone else made is refused and left as it was, and only a file a lab
// of that name left is replaced.
func TestWriteOwnNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	conf, target := filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "precious")
	mark := "# v6lab lab t: its sites' DNS servers"
	os.WriteFile(target, []byte("keep me\n"), 0o644)
	if err := os.Symlink(target, conf); err != nil {
		t.Fatal(err)
	}
	if err := writeOwn(conf, mark, mark+"\nnameserver 192.0.2.1\n"); err == nil || !strings.Contains(err.Error(), "is not v6lab's (a symbolic link)") {
		t.Errorf("through a link: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	os.Remove(conf)
	os.WriteFile(conf, []byte("nameserver 9.9.9.9\n"), 0o644)
	if err := writeOwn(conf, mark, mark+"\n"); err == nil || !strings.Contains(err.Error(), "is not v6lab's (a regular file)") {
		t.Errorf("over another's file: %v", err)
	}
	os.WriteFile(conf, []byte(mark+", old\n"), 0o644)
	if err := writeOwn(conf, mark, mark+", new\n"); err != nil {
		t.Errorf("over its own: %v", err)
	}
	os.Remove(conf)
	if err := writeOwn(conf, mark, mark+", new\n"); err != nil {
		t.Errorf("anew: %v", err)
	}
	if b, _ := os.ReadFile(conf); string(b) != mark+", new\n" {
		t.Errorf("holds %q", b)
	}
}
