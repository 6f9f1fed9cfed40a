// Package experiments holds v6lab's built-in experiments: quick (the main
// job) and one per study v6lab reproduces. Each is an ordinary experiment
// file; v6lab run --print NAME writes one out to edit.
package experiments

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

//go:embed labs/*.yaml
var labs embed.FS

// Names lists the built-in experiments.
func Names() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Get returns the file of a built-in experiment.
func Get(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in experiment %q (built in: %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Lab returns a built-in lab topology that a built-in experiment names
// (its topology field), from experiments/labs.
func Lab(name string) ([]byte, error) {
	b, err := labs.ReadFile("labs/" + name)
	if err != nil {
		return nil, fmt.Errorf("no built-in lab topology %q", name)
	}
	return b, nil
}

// Print is a built-in experiment as --print writes it, to save and edit:
// its topology, a file beside the built-in experiments, becomes a
// reference to the built-in lab (BuiltinLab), so the saved file runs
// wherever it is saved, under any name (saved as rubio.yaml, rubio's
// "topology: rubio.yaml" named the experiment itself).
func Print(name string) ([]byte, error) {
	b, err := Get(name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if t, ok := strings.CutPrefix(line, "topology: "); ok && !strings.HasPrefix(t, BuiltinLab) {
			line = "# its lab, built into v6lab (docs/lab.md); give your own topology file to change it\n" +
				"topology: " + BuiltinLab + t
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, "")), nil
}
