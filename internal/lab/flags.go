package lab

import (
	"time"

	"github.com/spf13/pflag"
)

// Flags are the lab settings lab up and run take as flags: each, when
// the user gave it, overrides the topology's (Overrides).
type Flags struct {
	fl *pflag.FlagSet
	// flags are every lab flag, in the order registered: each sets the
	// lab it names (Overrides, Given) when the user gave it.
	flags []labFlag
}

// labFlag is one lab flag: its name, whether it sets the lab (--name
// only names it), and how it sets its override.
type labFlag struct {
	name string
	sets bool
	set  func(*Overrides)
}

// Register declares the lab's flags on fl; withName adds --name (the
// lab's, where the command has no other).
func (f *Flags) Register(fl *pflag.FlagSet, withName bool) {
	f.fl = fl
	if withName {
		flag(f, "name", fl.String("name", "default", "lab name (namespaces are v6lab-NAME-ROLE)"), func(o *Overrides, v *string) { o.Name = v })
	}
	flag(f, "tunnel-mtu", fl.Int("tunnel-mtu", DefaultTunnelMTU, "MTU of the lab's 6in4 tunnel (1280 to 1480)"), func(o *Overrides, v *int) { o.TunnelMTU = v })
	flag(f, "tunnel", fl.String("tunnel", "auto", "6in4 implementation: auto, sit, bpf or userspace (auto: sit where the kernel has it, else bpf, else userspace)"),
		func(o *Overrides, v *string) { o.Tunnel = v })
	flag(f, "rate", fl.String("rate", "", "shape every lab link to this rate (e.g. 10M, 100M; 0: unshaped, whatever the topology says); default: the topology's rates, else unshaped"), func(o *Overrides, v *string) { o.Rate = v })
	flag(f, "queue-limit", fl.String("queue-limit", "", "queue limit of each shaped link, bytes (e.g. 64K; default: 50 ms of the rate)"),
		func(o *Overrides, v *string) { o.QueueLimit = v })
	flag(f, "delay", fl.Duration("delay", 0, "one-way delay added by each link (needs netem)"), func(o *Overrides, v *time.Duration) { o.Delay = v })
	flag(f, "jitter", fl.Duration("jitter", 0, "jitter around --delay (needs netem)"), func(o *Overrides, v *time.Duration) { o.Jitter = v })
	flag(f, "loss", fl.Float64("loss", 0, "packet loss in percent on each link (netem where the kernel has it, else tc BPF)"), func(o *Overrides, v *float64) { o.Loss = v })
	flag(f, "congestion", fl.String("congestion", DefaultCongestion, "TCP congestion control of every lab host (cubic, reno, bbr, …; the kernel's available ones)"),
		func(o *Overrides, v *string) { o.Congestion = v })
	flag(f, "bare-server", fl.Bool("bare-server", false, "turn SACK, timestamps and window scaling off in the server host (the Towson study's bare-PC server)"),
		func(o *Overrides, v *bool) { o.BareServer = v })
	flag(f, "ptb-blackhole", fl.String("ptb-blackhole", "", "drop the ICMP errors path MTU discovery needs, at the routers: ipv6 (Packet Too Big), ipv4 (fragmentation needed) or both (docs/lab.md)"),
		func(o *Overrides, v *string) { o.PTBBlackhole = v })
	flag(f, "fragments", fl.String("fragments", "", "drop IP fragments at r1: drop (both families), ipv6 or ipv4"), func(o *Overrides, v *string) { o.Fragments = v })
	flag(f, "tcp-mtu-probing", fl.Int("tcp-mtu-probing", 0, "net.ipv4.tcp_mtu_probing of the client and server hosts: 0, 1 (after a black hole) or 2 (always)"),
		func(o *Overrides, v *int) { o.MTUProbing = v })
	flag(f, "mss-clamp", fl.Bool("mss-clamp", false, "clamp the MSS of TCP SYNs the routers forward to their route's MTU (nftables)"),
		func(o *Overrides, v *bool) { o.MSSClamp = v })
}

// flag keeps how a flag sets its override, when the user gives it.
func flag[T any](f *Flags, name string, v *T, set func(*Overrides, *T)) {
	f.flags = append(f.flags, labFlag{name: name, sets: name != "name", set: func(o *Overrides) { set(o, v) }})
}

// Overrides are the settings the user gave as flags (nil: the
// topology's).
func (f *Flags) Overrides() Overrides {
	var o Overrides
	for _, lf := range f.flags {
		if f.fl.Changed(lf.name) {
			lf.set(&o)
		}
	}
	return o
}

// Given are the flags the user gave that set the lab (--loss, --rate,
// --ptb-blackhole, …; not --name), as typed ("--loss 3"), in the order
// registered: where no lab is built, a run refuses them rather than
// measure as if they had not been given.
func (f *Flags) Given() []string {
	var out []string
	for _, lf := range f.flags {
		fl := f.fl.Lookup(lf.name)
		switch {
		case !lf.sets || !fl.Changed:
		case fl.Value.Type() == "bool" && fl.Value.String() == "true":
			out = append(out, "--"+lf.name)
		case fl.Value.Type() == "bool":
			out = append(out, "--"+lf.name+"=false")
		default:
			out = append(out, "--"+lf.name+" "+fl.Value.String())
		}
	}
	return out
}
