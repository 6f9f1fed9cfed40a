package result

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CheckRoot says why root cannot receive result directories (nil when it
// can): it is a directory, or it does not exist and its parent does, so
// that NewDir makes root alone. A mistyped --results deep in a path that
// does not exist is an error naming the missing parent, not a chain of
// directories made as root.
func CheckRoot(root string) error {
	if root == "" {
		return errors.New("--results is empty: give the directory results go in (default: results)")
	}
	st, err := os.Stat(root)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("--results %s: %s is a file, not a directory", root, fileOnTheWay(root))
	case err == nil && !st.IsDir():
		return fmt.Errorf("--results %s: it is a file, not a directory", root)
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--results %s: %w", root, err)
	}
	parent := filepath.Dir(filepath.Clean(root))
	if pst, err := os.Stat(parent); err != nil || !pst.IsDir() {
		return fmt.Errorf("--results %s: its parent directory %s does not exist (v6lab makes only the last directory of --results; make the parent first)", root, parent)
	}
	return nil
}

// fileOnTheWay is the first of path's parents that is not a directory.
func fileOnTheWay(path string) string {
	var parents []string
	for p := filepath.Dir(filepath.Clean(path)); ; p = filepath.Dir(p) {
		parents = append(parents, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(parents) - 1; i >= 0; i-- {
		if st, err := os.Stat(parents[i]); err == nil && !st.IsDir() {
			return parents[i]
		}
	}
	return filepath.Dir(path)
}

// NewDir makes a fresh result directory root/<name>-<UTC time>, adding a
// suffix rather than ever reusing an existing directory. root itself is
// made when missing, but not its parents (CheckRoot). name is one path
// component: a name with a slash (merge --name ../x) would put the
// directory elsewhere than root.
func NewDir(root, name string, now time.Time) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("result: --name %q cannot name a result directory: a name, without a slash", name)
	}
	if err := CheckRoot(root); err != nil {
		return "", fmt.Errorf("result: %w", err)
	}
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("result: %w", err)
	}
	base := filepath.Join(root, name+"-"+now.UTC().Format("20060102T150405Z"))
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", fmt.Errorf("result: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}
