package experiment

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Override is what a command line lays over every cell group of an
// experiment (v6lab run's flags); nil or empty keeps the file's. Errors
// name the flag.
type Override struct {
	Name, Server             *string
	Paths                    []path.Path
	Conns                    []int
	Runs, Warmup, Objects    *int
	Timeout, Pause, Duration *time.Duration
	Shuffle                  bool
	Seed                     *int64
	Scale                    *float64
	Spin                     *time.Duration
	SampleEvery              *int
}

// MaxSampleEvery bounds sample_every: one row of every million samples.
const MaxSampleEvery = 1_000_000

// Override applies o.
func (e *Experiment) Override(o Override) error {
	if o.Name != nil {
		e.Name = *o.Name
	}
	if o.Server != nil {
		if err := e.overrideServer(*o.Server); err != nil {
			return err
		}
	}
	if o.Duration != nil && *o.Duration < 0 {
		return fmt.Errorf("--duration must not be negative")
	}
	if o.Spin != nil {
		if err := CheckSpin(*o.Spin); err != nil {
			return fmt.Errorf("--spin: %w", err)
		}
		d := Duration(*o.Spin)
		e.Spin = &d
	}
	if o.SampleEvery != nil {
		if n := *o.SampleEvery; n < 1 || n > MaxSampleEvery {
			return fmt.Errorf("--sample-every: %d: want 1 (every sample) to %d", n, MaxSampleEvery)
		}
		e.SampleEvery = *o.SampleEvery
		if err := e.CheckSampleEvery(false); err != nil {
			return fmt.Errorf("--sample-every: %w", err)
		}
	}
	for i := range e.Groups {
		c := &e.Groups[i]
		if o.Paths != nil {
			c.Paths = slices.Clone(o.Paths)
		}
		if o.Conns != nil {
			c.Conns = slices.Clone(o.Conns)
		}
		setInt(&c.Runs, o.Runs)
		setInt(&c.Warmup, o.Warmup)
		setDuration(&c.Timeout, o.Timeout)
		setDuration(&c.Pause, o.Pause)
		setDuration(&c.Duration, o.Duration)
		if o.Objects != nil {
			if err := c.setOption("objects", fmt.Sprint(*o.Objects), e.Where); err != nil {
				return fmt.Errorf("--objects: %w", err)
			}
		}
	}
	if o.Paths != nil && !slices.Contains(e.Paths(), e.Baseline) {
		e.Baseline = e.Paths()[0]
	}
	if o.Shuffle {
		e.Order = OrderShuffled
	}
	if e.Order == OrderShuffled {
		if o.Seed != nil {
			e.Seed = *o.Seed
		} else if e.Seed == 0 {
			e.Seed = time.Now().UnixNano() % 1e9
		}
	}
	if o.Scale != nil {
		if err := e.Scale(*o.Scale); err != nil {
			return fmt.Errorf("--scale: %w", err)
		}
	}
	return e.checkGiven(o)
}

// checkGiven checks the cell groups' values the flags gave, each error
// naming its flag; the file's own values are checked with the file.
func (e *Experiment) checkGiven(o Override) error {
	given := map[string]bool{"paths": o.Paths != nil, "conns": o.Conns != nil, "runs": o.Runs != nil,
		"warmup": o.Warmup != nil, "timeout": o.Timeout != nil, "pause": o.Pause != nil, "duration": o.Duration != nil}
	for i := range e.Groups {
		var fe *FieldError
		if err := e.Groups[i].Validate(); errors.As(err, &fe) && given[fe.Field] {
			return fe.AsFlag()
		}
	}
	return nil
}

// overrideServer makes every cell group measure the embedded or the real
// servers, if each can.
func (e *Experiment) overrideServer(server string) error {
	switch server {
	case "embedded":
	case "real":
		for i := range e.Groups {
			if err := RealServersFit(&e.Groups[i]); err != nil {
				return fmt.Errorf("--server real: cell group %s: %w", e.Groups[i].CellName(), err)
			}
		}
	default:
		return fmt.Errorf("--server: %q is not embedded or real", server)
	}
	e.Servers = server
	for i := range e.Groups {
		e.Groups[i].Server = map[bool]string{true: "real"}[server == "real"]
	}
	return nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setDuration(dst *Duration, v *time.Duration) {
	if v != nil {
		*dst = Duration(*v)
	}
}

// setOption sets a cell group's option from a flag of v6lab run, if its
// protocol has it, and checks the options again by the protocol's rules
// (an option the file gave counts as given).
func (c *CellGroup) setOption(name, text string, where result.Where) error {
	f, ok := proto.FieldOf(c.Opts(), name)
	if !ok || c.Options == nil {
		return nil
	}
	if err := f.Set(text); err != nil {
		return err
	}
	err := c.Options.Check(where, func(o string) bool {
		g, ok := proto.FieldOf(c.Options, o)
		return ok && !g.IsZero()
	})
	if oe, ok := proto.AsOptionError(err); ok && oe.Option == name {
		return oe.Err
	}
	return err
}
