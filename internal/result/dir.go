package result

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// NewDir makes a fresh result directory root/<name>-<UTC time>, adding a
// suffix rather than ever reusing an existing directory.
func NewDir(root, name string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
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
