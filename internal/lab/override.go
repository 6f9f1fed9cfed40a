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
	// The path MTU settings (Config.PMTU), each as its flag gives it.
	PTBBlackhole, Fragments *string
	MTUProbing              *int
	MSSClamp                *bool
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
	if err := o.checkEmulation(); err != nil {
		return err
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
	if err := c.overridePMTU(o); err != nil {
		return err
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

// checkEmulation checks --delay, --jitter and --loss by the rules of
// every link's values, naming the flag.
func (o Overrides) checkEmulation() error {
	for _, d := range []struct {
		flag string
		v    *time.Duration
	}{{"delay", o.Delay}, {"jitter", o.Jitter}} {
		if d.v != nil {
			if err := CheckDelay(*d.v); err != nil {
				return fmt.Errorf("--%s: %w", d.flag, err)
			}
		}
	}
	if o.Loss != nil {
		if err := CheckLoss(*o.Loss); err != nil {
			return fmt.Errorf("--loss: %w", err)
		}
	}
	return nil
}

// overridePMTU lays the path MTU flags over the topology's pmtu.
func (c *Config) overridePMTU(o Overrides) error {
	if o.PTBBlackhole != nil {
		if err := CheckPTBBlackhole(*o.PTBBlackhole); err != nil {
			return fmt.Errorf("--ptb-blackhole: %w", err)
		}
		c.PMTU.PTBBlackhole = *o.PTBBlackhole
	}
	if o.Fragments != nil {
		if err := CheckFragments(*o.Fragments); err != nil {
			return fmt.Errorf("--fragments: %w", err)
		}
		c.PMTU.Fragments = *o.Fragments
	}
	if o.MTUProbing != nil {
		if err := CheckMTUProbing(*o.MTUProbing); err != nil {
			return fmt.Errorf("--tcp-mtu-probing: %w", err)
		}
		v := *o.MTUProbing
		c.PMTU.MTUProbing = &v
	}
	if o.MSSClamp != nil {
		c.PMTU.MSSClamp = *o.MSSClamp
	}
	return nil
}
