package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"v6lab/internal/result"
	"v6lab/internal/run/measure"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// bar is the progress bar of a run: runs done of the plan, the cell that
// just finished, the samples and bytes written so far (live, through a
// long load run too), and an ETA.
type bar struct {
	p    *mpb.Progress
	b    *mpb.Bar
	cell *string
}

func newBar(w io.Writer, total, done int, written measure.Written) *bar {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))
	cell := new(string)
	b := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.CountersNoUnit("run %d/%d "), decor.Any(func(decor.Statistics) string { return *cell })),
		mpb.AppendDecorators(decor.Percentage(), decor.Any(func(decor.Statistics) string { return ", " + measure.WrittenText(written) }),
			decor.Name(", ETA "), decor.AverageETA(decor.ET_STYLE_MMSS)),
	)
	b.SetCurrent(int64(done))
	b.DecoratorAverageAdjust(time.Now())
	return &bar{p: p, b: b, cell: cell}
}

func (b *bar) Step(done, total int, title string, r result.Run) {
	*b.cell = fmt.Sprintf("%-28s %d/%d ok", title, r.Completed, r.Completed+r.Failed)
	b.b.SetCurrent(int64(done))
}

func (b *bar) Done() {
	if !b.b.Completed() {
		b.b.Abort(false)
	}
	b.p.Wait()
}
