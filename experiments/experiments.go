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
