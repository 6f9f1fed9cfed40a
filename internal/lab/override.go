package lab

import (
	"fmt"
	"time"

	"v6lab/internal/input/units"
)

// Overrides are lab settings given on a command line, laid over a
// topology's (nil: keep the topology's); the shaping ones apply to every
// link.
type Overrides struct {
	Name, Tunnel, Congestion *string
	TunnelMTU                *int
	BareServer               *bool
	// Rate and QueueLimit are as typed (10M, 64K): checked here.
	Rate, QueueLimit *string
	Delay, Jitter    *time.Duration
	Loss             *float64
}

// Override lays o over c and checks the result. Errors name the setting
// as a flag (--rate).
func (c *Config) Override(o Overrides) error {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.Name, o.Name)
	set(&c.Tunnel, o.Tunnel)
	set(&c.Congestion, o.Congestion)
	if o.TunnelMTU != nil {
		c.TunnelMTU = *o.TunnelMTU
	}
	if o.BareServer != nil {
		c.BareServer = *o.BareServer
	}
	var shape []func(*Shaping)
	if o.Rate != nil {
		r, err := units.ParseRate(*o.Rate)
		if err != nil {
			return fmt.Errorf("--rate: %w", err)
		}
		// 0: unshaped, whatever the topology's rates (the main job's
		// 1 Gbit/s links among them).
		shape = append(shape, func(s *Shaping) { s.Rate = r })
	}
	if o.QueueLimit != nil {
		q, err := units.ParseSize(*o.QueueLimit)
		if err != nil || q > 1<<30 {
			return fmt.Errorf("--queue-limit: want bytes up to 1G such as 64K, not %q", *o.QueueLimit)
		}
		shape = append(shape, func(s *Shaping) { s.QueueLimit = uint32(q) })
	}
	if o.Delay != nil {
		shape = append(shape, func(s *Shaping) { s.Delay = *o.Delay })
	}
	if o.Jitter != nil {
		shape = append(shape, func(s *Shaping) { s.Jitter = *o.Jitter })
	}
	if o.Loss != nil {
		shape = append(shape, func(s *Shaping) { s.Loss = *o.Loss })
	}
	for _, fn := range shape {
		fn(&c.Shaping)
		for name, l := range c.Links {
			fn(&l.Shaping)
			c.Links[name] = l
		}
	}
	return c.Validate()
}
