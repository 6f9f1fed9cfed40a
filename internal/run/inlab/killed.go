package inlab

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"v6lab/internal/report"
	"v6lab/internal/result"
	"v6lab/internal/run/host"
	"v6lab/internal/run/measure"
)

// ChildKilledError is the measuring process killed by a signal (kill -9,
// the OOM killer): it could say nothing, so this process reported what it
// wrote. Dir is the result directory, "" when it holds no samples;
// Partial its partial line ("" when every run finished).
type ChildKilledError struct {
	Killed  *host.KilledError
	Dir     string
	Partial string
}

func (e *ChildKilledError) Error() string {
	what := fmt.Sprintf("the measuring process (v6lab run --lab-child, pid %d) was killed by %s", e.Killed.PID, e.Killed.Says())
	switch {
	case e.Dir == "":
		return what + " before it wrote a sample: nothing was measured"
	case e.Partial == "":
		return what + "; every run had finished: the result is whole in " + e.Dir
	}
	return what + "; every finished run is kept in " + e.Dir + ": " + e.Partial
}

// resultDir makes the new result directory the child will write (Job.Made),
// unless it resumes one, and returns the directory either way.
func (r *Session) resultDir(job *Job) (string, error) {
	if job.Dir != "" {
		return job.Dir, nil
	}
	dir, err := result.NewDir(r.Results, r.Exp.Name, time.Now())
	if err != nil {
		return "", err
	}
	job.Made = dir
	return dir, nil
}

// afterChild settles the result directory once the child has ended with
// err: a directory made for it that it left empty (it failed before it
// measured) is removed; if a signal killed it, the result it wrote is
// reported, as its own Ctrl-C would have (summary.json, report.txt,
// results.csv, report.html, and the partial line).
func (r *Session) afterChild(job *Job, dir string, err error) error {
	if err != nil && job.Made != "" {
		os.Remove(dir) // only when empty
	}
	var ke *host.KilledError
	if !errors.As(err, &ke) {
		return err
	}
	ce := &ChildKilledError{Killed: ke}
	if !result.HasSamples(dir) {
		if ke.Signal == syscall.SIGINT || ke.Signal == syscall.SIGTERM {
			// Ctrl-C reached it before it could catch it (its first
			// milliseconds): an interrupt, not a crash.
			return &measure.InterruptedError{}
		}
		return ce
	}
	s, werr := report.WriteAll(dir)
	if werr != nil {
		return errors.Join(ce, werr)
	}
	if !r.Quiet {
		report.Text(r.Out, s)
		fmt.Fprintln(r.Out)
	}
	fmt.Fprintf(r.Out, "results: %s (%s)\n", dir, measure.ResultFiles(dir))
	ce.Dir = dir
	if s.Partial != nil {
		ce.Partial = s.Partial.Line()
	}
	return ce
}
