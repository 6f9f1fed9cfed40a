package experiments

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"v6lab/internal/run/experiment"
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
