package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"v6lab/internal/input/specfile"
)

// mkdirNoLink makes directory dir (mode 0o755) and each missing directory
// between it and base, an existing directory trusted as it is (/etc,
// /run). It never goes through a symbolic link: a link (or any other
// non-directory) on the way is refused, naming it, where os.MkdirAll
// would follow it and create v6lab's files, as root, wherever it points.
func mkdirNoLink(base, dir string) error {
	rel, err := filepath.Rel(base, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not below %s", dir, base)
	}
	at := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		if err := os.Mkdir(at, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		st, err := os.Lstat(at)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is %s, not a directory: v6lab creates nothing through it; remove it", at, specfile.Kind(st.Mode()))
		}
	}
	return nil
}

// createNoLink creates or truncates file name for writing, never through a
// symbolic link at its last component (O_NOFOLLOW): one there is refused,
// naming it.
func createNoLink(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o644)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: v6lab writes nothing through it; remove it", name)
	}
	return f, err
}

// MkStateDir makes StateDir (a directory in /run, not a link).
func MkStateDir() error {
	if err := mkdirNoLink(filepath.Dir(StateDir), StateDir); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// CreateLog creates (or truncates) lab name's log file in StateDir, never
// through a symbolic link.
func CreateLog(name string) (*os.File, error) {
	file, err := LogFile(name)
	if err != nil {
		return nil, err
	}
	if err := MkStateDir(); err != nil {
		return nil, err
	}
	f, err := createNoLink(file)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return f, nil
}
