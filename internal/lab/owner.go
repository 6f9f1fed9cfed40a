package lab

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StateDir holds one owner record (NAME.json) and one log per lab.
var StateDir = "/run/v6lab"

// ErrBadName is wrapped when a lab name is not a plain name.
var ErrBadName = errors.New("bad lab name")

var labName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,14}$`)

// CheckName is the one check of a lab name, made before a name touches the
// disk, a namespace or a process: a plain name can never walk out of
// StateDir or be mistaken for another lab's prefix.
func CheckName(name string) error {
	if !labName.MatchString(name) {
		return fmt.Errorf("lab: %w %q: 1-15 lowercase letters, digits or dashes, starting with a letter or digit", ErrBadName, name)
	}
	return nil
}

// RunName names a run's own lab with a random suffix: a pid would
// collide across PID namespaces (two containers both run pid 1).
func RunName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "run" + hex.EncodeToString(b[:])
}

// Record is what one lab owns. It is written before anything is made and
// grows as each thing is made, so that whatever a killed owner leaves
// behind is found and removed exactly: never by a name prefix.
type Record struct {
	Name string `json:"name"`
	// PID and Start identify the owner process; Start (its start time in
	// clock ticks since boot) keeps a recycled pid from passing as alive.
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	// Kept labs outlive their owner on purpose (run --keep).
	Kept       bool      `json:"kept,omitempty"`
	Created    time.Time `json:"created"`
	Namespaces []string  `json:"namespaces"`
	Daemons    []Daemon  `json:"daemons,omitempty"`
	Dirs       []string  `json:"dirs,omitempty"`
	// Tunnel is the 6in4 implementation built (lab status names it when
	// its owner is gone and took the tunnel with it).
	Tunnel string `json:"tunnel,omitempty"`
	// Sites is the lab of sites' file the lab serves (lab up --sites),
	// which lab status names.
	Sites string `json:"sites,omitempty"`
	file  string
}

// Daemon is a process the lab started (a real server, the measuring
// process); Start as above.
type Daemon struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	What  string `json:"what"`
}

// Running says whether the daemon's process still runs (same pid and
// start time).
func (d Daemon) Running() bool { return d.Start != 0 && alive(d.PID, d.Start) }

func recordFile(name string) string { return filepath.Join(StateDir, name+".json") }

// LogFile is where the lab's owner process writes its log.
func LogFile(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	return filepath.Join(StateDir, name+".log"), nil
}

// procStat reads a process's state (field 3 of /proc/PID/stat) and start
// time (field 22), or 0 when the process does not exist.
func procStat(pid int) (state byte, start uint64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// fields after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return f[0][0], v
}

func procStart(pid int) uint64 {
	_, start := procStat(pid)
	return start
}

// alive says whether the process pid with start time start still runs (a
// zombie, dead but not yet reaped, does not).
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	state, st := procStat(pid)
	if state == 0 || state == 'Z' || state == 'X' {
		return false
	}
	return start == 0 || st == start
}

// Claim makes lab name this process's: it writes the owner record before
// anything of the lab exists. A live owner of the name is an error; a dead
// owner's leftovers are removed first.
func Claim(name string) (*Record, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if old, err := ReadRecord(name); err == nil {
		if old.Alive() {
			return nil, fmt.Errorf("lab: lab %q is already up (process %d); run v6lab lab down --name %s first", name, old.PID, name)
		}
		if err := old.Remove(); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// Namespaces of the name without a record (a killed pre-record run, or
	// `ip netns add` by hand): refuse rather than guess whose they are.
	if left := exactNamespaces(name); len(left) > 0 {
		return nil, fmt.Errorf("lab: namespaces of lab %q exist but no process owns them (%s); remove them with v6lab lab down --name %s", name, strings.Join(left, ", "), name)
	}
	pid := os.Getpid()
	r := &Record{Name: name, PID: pid, Start: procStart(pid), Created: time.Now().UTC(), file: recordFile(name)}
	if err := MkStateDir(); err != nil {
		return nil, err
	}
	// O_EXCL: two processes claiming one name at once cannot both win.
	f, err := os.OpenFile(r.file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lab: lab %q is being built by another process", name)
		}
		return nil, fmt.Errorf("lab: %w", err)
	}
	f.Close()
	return r, r.save()
}

// ReadRecord reads lab name's owner record.
func ReadRecord(name string) (*Record, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	file := recordFile(name)
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Name != name {
		return nil, fmt.Errorf("lab: %s is not an owner record of lab %q; remove it by hand", file, name)
	}
	r.file = file
	return &r, nil
}

// save writes the record whole: a temporary file in StateDir, renamed.
func (r *Record) save() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	f, err := os.CreateTemp(StateDir, "."+r.Name+"-*.tmp")
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), r.file)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("lab: owner record: %w", err)
	}
	return nil
}

// Alive says whether the record's owner process still runs.
func (r *Record) Alive() bool { return alive(r.PID, r.Start) }

// addNamespace records a namespace before it is made.
func (r *Record) addNamespace(ns string) error {
	if r == nil {
		return nil
	}
	if !slices.Contains(r.Namespaces, ns) {
		r.Namespaces = append(r.Namespaces, ns)
	}
	return r.save()
}

// AddDaemon records a process the lab started, as soon as it runs.
func (r *Record) AddDaemon(pid int, what string) error {
	if r == nil {
		return nil
	}
	r.Daemons = append(r.Daemons, Daemon{PID: pid, Start: procStart(pid), What: what})
	return r.save()
}

// setTunnel records the tunnel built.
func (r *Record) setTunnel(impl string) error {
	if r == nil {
		return nil
	}
	r.Tunnel = impl
	return r.save()
}

// AddDir records a working directory, before it is filled.
func (r *Record) AddDir(dir string) error {
	if r == nil {
		return nil
	}
	r.Dirs = append(r.Dirs, dir)
	return r.save()
}

// Keep marks the lab as kept on purpose beyond its owner's life: the next
// run's clean-up leaves it alone, lab down removes it.
func (r *Record) Keep() error {
	r.Kept = true
	return r.save()
}

// Remove removes everything the record names (daemons whose pid and
// start time still match, directories, namespaces and the lab's own role
// namespaces), then the record and the lab's log.
func (r *Record) Remove() error {
	var errs []error
	for _, d := range r.Daemons {
		if d.Running() {
			// Its process group too (servers run as group leaders, their
			// workers in the group).
			_ = syscall.Kill(-d.PID, syscall.SIGKILL)
			_ = syscall.Kill(d.PID, syscall.SIGKILL)
		}
	}
	// A killed process goes in a moment; wait for it, so that whoever
	// called lab down finds it gone.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !slices.ContainsFunc(r.Daemons, Daemon.Running) {
			break
		}
	}
	for _, d := range r.Dirs {
		// Only what v6lab made: a temporary directory of its own name.
		if filepath.IsAbs(d) && strings.HasPrefix(filepath.Base(d), "v6lab-") {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, fmt.Errorf("lab: %w", err))
			}
		}
	}
	nss := append(exactNamespaces(r.Name), r.Namespaces...)
	slices.Sort(nss)
	for _, ns := range slices.Compact(nss) {
		if !strings.HasPrefix(ns, Prefix+r.Name+"-") {
			continue // a record that names another lab's namespace is never obeyed
		}
		if err := deleteNamed(ns); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		_ = os.Remove(r.file)
		_ = os.Remove(filepath.Join(StateDir, r.Name+".log"))
	}
	return errors.Join(errs...)
}

// Owner returns the live process keeping lab name, or 0.
func Owner(name string) int {
	r, err := ReadRecord(name)
	if err != nil || !r.Alive() {
		return 0
	}
	return r.PID
}

// exactNamespaces lists the namespaces of lab name's own roles that exist:
// exact names only, so lab "a" never matches lab "a-b".
func exactNamespaces(name string) []string {
	var out []string
	for _, role := range append(append([]string{}, Hosts...), GenHosts...) {
		ns := NS(name, role)
		if _, err := os.Stat(filepath.Join(NetnsDir, ns)); err == nil {
			out = append(out, ns)
		}
	}
	return out
}

// Orphan is a lab whose owner is gone (or that has no record at all).
type Orphan struct {
	Name string
	// PID is the dead owner's pid, 0 when there is no record.
	PID        int
	Kept       bool
	Namespaces []string
	Daemons    []Daemon
	Dirs       []string
}

// Orphans lists labs whose owner is dead, and namespaces of v6lab's
// naming that no record claims.
func Orphans() ([]Orphan, error) {
	names, err := Names()
	if err != nil {
		return nil, err
	}
	var out []Orphan
	for _, n := range names {
		r, err := ReadRecord(n)
		switch {
		case err == nil && r.Alive():
		case err == nil:
			out = append(out, Orphan{Name: n, PID: r.PID, Kept: r.Kept, Namespaces: exactNamespaces(n), Daemons: r.Daemons, Dirs: r.Dirs})
		default:
			out = append(out, Orphan{Name: n, Namespaces: exactNamespaces(n)})
		}
	}
	return out, nil
}

// Reap removes every lab whose recorded owner process is dead and that was
// not kept on purpose: what killed runs or lab owners left behind, of any
// user or process (lab down --orphans asks for it; nothing runs it
// unasked). Labs without a record are left alone (lab status --all lists
// them). It returns the names removed.
func Reap() ([]string, error) { return reap(nil) }

// ReapNamed removes lab name when it is stale (its recorded owner is dead
// and it was not kept): what lab up --name NAME would otherwise refuse or
// silently replace. It returns the dead owner's pid, 0 when nothing was
// removed.
func ReapNamed(name string) (pid int, err error) {
	r, err := ReadRecord(name)
	if err != nil || r.Alive() || r.Kept {
		return 0, nil
	}
	if _, err := reap(func(n string) bool { return n == name }); err != nil {
		return 0, err
	}
	return r.PID, nil
}

// reap is Reap of the labs only names that only says yes to (nil: all), so
// a test reaps its own lab and not another package's test's orphan.
func reap(only func(name string) bool) ([]string, error) {
	names, err := Names()
	if err != nil {
		return nil, err
	}
	var reaped []string
	for _, n := range names {
		if only != nil && !only(n) {
			continue
		}
		r, err := ReadRecord(n)
		if err != nil || r.Alive() || r.Kept {
			continue
		}
		if err := r.Remove(); err != nil {
			return reaped, err
		}
		reaped = append(reaped, n)
	}
	return reaped, nil
}

// Names lists the labs that have namespaces or an owner record here.
func Names() ([]string, error) {
	nss, err := Namespaces(Prefix)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if CheckName(n) == nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, ns := range nss {
		rest := strings.TrimPrefix(ns, Prefix)
		// Roles hold no dash: the lab's name is all before the last one.
		if i := strings.LastIndex(rest, "-"); i > 0 {
			add(rest[:i])
		}
	}
	if ents, err := os.ReadDir(StateDir); err == nil {
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
				add(n)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
