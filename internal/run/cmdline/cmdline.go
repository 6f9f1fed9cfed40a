// Package cmdline holds what v6lab's commands share in how they read a
// command line: bad input is an error with exit status 2.
package cmdline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"v6lab/internal/input/specfile"
)

// BadInput is an error of the user's input: exit status 2.
type BadInput struct{ Err error }

func (e *BadInput) Error() string { return e.Err.Error() }
func (e *BadInput) Unwrap() error { return e.Err }

// ExitCode is 2, the status of bad input.
func (e *BadInput) ExitCode() int { return 2 }

// Groups makes every command under c that only groups others (serve,
// probe, lab) refuse an argument that names none of them, as the top level
// does for an unknown command (cobra gives such a command any arguments,
// and printed its help with exit 0); alone it still prints its help.
func Groups(c *cobra.Command) {
	if c.HasParent() && !c.Runnable() && c.HasSubCommands() {
		c.RunE = unknownSub
	}
	for _, sub := range c.Commands() {
		Groups(sub)
	}
}

func unknownSub(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	var valid []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			valid = append(valid, sub.Name())
		}
	}
	return &BadInput{fmt.Errorf("unknown command %q for %q (want %s)", args[0], cmd.CommandPath(), strings.Join(valid, ", "))}
}

// CheckOutputFile refuses a file to write (flag's value; "" for none given)
// that is a directory, or in a directory that does not exist, naming the
// flag and the path: the errors of writing it named the temporary file
// written beside it.
func CheckOutputFile(flag, name string) error {
	if name == "" {
		return nil
	}
	bad := func(format string, a ...any) error {
		return &BadInput{fmt.Errorf("--"+flag+": "+format, a...)}
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return bad("%s is a directory: give a file's name", name)
	}
	dir := filepath.Dir(name)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("directory %s does not exist", dir)
	case err != nil:
		return bad("%v", err)
	case !st.IsDir():
		return bad("%s is not a directory", dir)
	}
	return nil
}

// FlagTypo adds to err, cobra's error of an unknown flag of c, the flag of
// c it is likely a typo of (--http-verison: did you mean --http-version?).
func FlagTypo(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var known []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	if k, ok := specfile.Nearest(name, known); ok {
		return fmt.Errorf("%w: did you mean --%s?", err, k)
	}
	return err
}
