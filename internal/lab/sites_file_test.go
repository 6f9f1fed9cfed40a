package lab

import (
	"net/netip"
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

// TestSitesResolvConfRefusesALinkedDirectory: a symbolic link planted at
// /etc/netns (or at the namespace's directory in it) is refused, naming
// it, and nothing is created where it points; a directory is made anew.
func TestSitesResolvConfRefusesALinkedDirectory(t *testing.T) {
	etc := t.TempDir()
	elsewhere := t.TempDir()
	old := EtcNetns
	EtcNetns = filepath.Join(etc, "netns")
	t.Cleanup(func() { EtcNetns = old })
	server := netip.MustParseAddr("192.0.2.1")
	if err := os.Symlink(elsewhere, EtcNetns); err != nil {
		t.Fatal(err)
	}
	err := writeSitesResolvConf("t", server)
	if err == nil || !strings.Contains(err.Error(), EtcNetns+" is a symbolic link, not a directory") {
		t.Errorf("through a linked %s: %v", EtcNetns, err)
	}
	if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
		t.Errorf("created through the link: %v", left)
	}
	os.Remove(EtcNetns)
	os.WriteFile(EtcNetns, nil, 0o644)
	if err := writeSitesResolvConf("t", server); err == nil || !strings.Contains(err.Error(), "is a regular file, not a directory") {
		t.Errorf("over a file: %v", err)
	}
	os.Remove(EtcNetns)
	os.Mkdir(EtcNetns, 0o755)
	if err := os.Symlink(elsewhere, filepath.Dir(SitesResolvConf("t"))); err != nil {
		t.Fatal(err)
	}
	if err := writeSitesResolvConf("t", server); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("through a linked namespace directory: %v", err)
	}
	if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
		t.Errorf("created through the link: %v", left)
	}
	os.Remove(filepath.Dir(SitesResolvConf("t")))
	if err := writeSitesResolvConf("t", server); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(SitesResolvConf("t")); !strings.Contains(string(b), "nameserver 192.0.2.1\n") {
		t.Errorf("resolv.conf holds %q", b)
	}
}

// TestStateFilesRefuseLinks: the state directory and a lab's log are
// never made through a symbolic link.
func TestStateFilesRefuseLinks(t *testing.T) {
	old := StateDir
	StateDir = filepath.Join(t.TempDir(), "v6lab")
	t.Cleanup(func() { StateDir = old })
	elsewhere := t.TempDir()
	os.Symlink(elsewhere, StateDir)
	if _, err := CreateLog("t"); err == nil || !strings.Contains(err.Error(), StateDir+" is a symbolic link, not a directory") {
		t.Errorf("linked state directory: %v", err)
	}
	os.Remove(StateDir)
	target := filepath.Join(elsewhere, "precious")
	os.WriteFile(target, []byte("keep me\n"), 0o644)
	os.Mkdir(StateDir, 0o755)
	os.Symlink(target, filepath.Join(StateDir, "t.log"))
	if _, err := CreateLog("t"); err == nil || !strings.Contains(err.Error(), "t.log is a symbolic link") {
		t.Errorf("linked log: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	os.Remove(filepath.Join(StateDir, "t.log"))
	f, err := CreateLog("t")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
