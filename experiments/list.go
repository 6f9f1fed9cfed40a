package experiments

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"v6lab/internal/lab"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

// List writes the built-in experiments as a table: name, cells, what
// each measures.
func List(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCELLS\tDESCRIPTION")
	for _, n := range Names() {
		b, _ := Get(n)
		e, err := experiment.Parse(n, b)
		if err != nil {
			return err
		}
		var cells []string
		for _, c := range e.Groups {
			cells = append(cells, fmt.Sprintf("%s%v", c.CellName(), c.Conns))
		}
		if len(cells) > 3 {
			count := map[string]int{}
			for _, c := range e.Groups {
				count[c.Protocol]++
			}
			cells = cells[:0]
			for _, p := range e.Protocols() {
				cells = append(cells, fmt.Sprintf("%s×%d", p, count[p]))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, strings.Join(cells, " "), e.Description)
	}
	fmt.Fprintln(tw, "\nrun one: v6lab run NAME; edit one: v6lab run --print NAME > my.yaml")
	return tw.Flush()
}

// Load reads the experiment a command line names (args: none, or one): a
// file, or a built-in experiment (quick when none is named); builtin says
// which it was. paths, when not nil, are every cell group's (run --paths),
// laid over the file's before their rules are checked.
func Load(args []string, paths []path.Path) (exp *experiment.Experiment, builtin bool, err error) {
	name := "quick"
	if len(args) == 1 {
		name = args[0]
	}
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		exp, err := experiment.LoadPaths(name, paths)
		return exp, false, err
	}
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, os.PathSeparator) {
		exp, err := experiment.LoadPaths(name, paths) // names the missing file
		return exp, false, err
	}
	b, err := Get(name)
	if err != nil {
		return nil, true, err
	}
	exp, err = experiment.ParsePaths("built-in "+name, b, paths)
	return exp, true, err
}

// BuiltinLab prefixes the topology of a built-in lab (labs/).
const BuiltinLab = experiment.BuiltinLab

// Topology reads a lab topology: a file, or a built-in experiment's
// (BuiltinLab and its name); none (file "") is the default lab. A lab the
// topology does not name is called defName.
func Topology(file, defName string) (lab.Config, error) {
	cfg := lab.Config{Name: defName, TunnelMTU: lab.DefaultTunnelMTU}
	if file == "" {
		return cfg, nil
	}
	var err error
	if name, ok := strings.CutPrefix(file, BuiltinLab); ok {
		var data []byte
		if data, err = Lab(name); err == nil {
			cfg, err = lab.ParseTopology("built-in lab "+name, data)
		}
	} else {
		cfg, err = lab.LoadTopology(file)
	}
	if cfg.Name == "" {
		cfg.Name = defName
	}
	return cfg, err
}
