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
// long load run too), and the time left (measure.Pace).
type bar struct {
	p    *mpb.Progress
	b    *mpb.Bar
	cell *string
}

func newBar(w io.Writer, total, done int, written measure.Written, pace *measure.Pace) *bar {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))
	cell := new(string)
	b := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.CountersNoUnit("run %d/%d "), decor.Any(func(decor.Statistics) string { return *cell })),
		mpb.AppendDecorators(decor.Percentage(), decor.Any(func(decor.Statistics) string { return ", " + measure.WrittenText(written) }),
			decor.Any(func(st decor.Statistics) string { return ", about " + pace.Left(int(st.Current), time.Now()) + " left" })),
	)
	b.SetCurrent(int64(done))
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
