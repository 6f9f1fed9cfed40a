package inlab

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"v6lab/internal/gen/congestion"
	"v6lab/internal/lab"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/wire/capture"
	"v6lab/internal/wire/tcpflow"
)

// conditions surround the runs of a lab experiment: the background
// traffic level a cell asks for, and the capture in the server host whose
// per-connection timelines complete a server_capture cell's samples.
type conditions struct {
	bg      *congestion.Background // nil without generator hosts
	server  *capture.Capture       // nil without server-side capture
	tracker *tcpflow.Tracker
	ports   map[string]uint16 // service port per wire key
	lookups map[string]uint16 // the port of the DNS server each key's transactions ask
	// lab names the lab; rates are its own link rates (by link name),
	// which a cell group's link_rate replaces for its runs; links is
	// what the links are now, read back (nil: never reshaped).
	lab   string
	rates map[string]lab.Shaping
	cur   uint64
	links map[string]string
	// impair is the IPv6 loss a cell group asked for (ipv6_loss), while
	// its runs last; dropped is its count when the run began.
	impair  *lab.Impairment
	dropped uint64
	// delay is the IPv6 delay a cell group asked for (ipv6_delay).
	delay *lab.Delay
	// pmtu is what the run does about path MTU (nil: nothing).
	pmtu *pmtuRuns
	// loss is the loss between the routers a cell group asked for
	// (loss); lost is its count when the run began.
	loss *lab.LinkLoss
	lost uint64
	// wide: the lab drops a share of every packet on some or all of its
	// links, in tc BPF (--loss, a topology's loss:); wideLost is what
	// each link's had dropped when the run began (by wideKey).
	wide     bool
	wideLost map[string]uint64
}

// wideLoss adds to a run's record what the lab-wide loss dropped in it,
// where it is, as a cell group's own loss is recorded: each cell ran at
// it. A loss of one share on every link is one entry (the lab's loss,
// `--loss`); else each link's is its own (a topology's `loss:` on r1-r2:
// "r1-r2 egress, both ends (the lab's loss)").
func (c *conditions) wideLoss(rec *result.Run) {
	if !c.wide {
		return
	}
	losses := lab.LabLosses(c.lab, c.loss)
	if len(losses) == 0 {
		return
	}
	rec.Links = maps.Clone(rec.Links)
	if rec.Links == nil {
		rec.Links = map[string]string{}
	}
	for _, e := range wideEntries(losses) {
		var n uint64
		for _, l := range e.of {
			n += l.Dropped - c.wideLost[wideKey(l)]
		}
		rec.Links[e.where] = fmt.Sprintf("%s: %s dropped in the run", e.what, stats.Count(n, "packet"))
	}
}

// wideEntry is a run record's entry of lab-wide loss: where, what (the
// record adds its count after ": "), and the losses it counts.
type wideEntry struct {
	where, what string
	of          []lab.LabLoss
}

// wideEntries are the record's entries of the lab's losses: one for a
// share on every link (the lab's loss, `--loss`), else one per link and
// share (a topology's `loss:` on r1-r2: "r1-r2 egress, both ends (the
// lab's loss)").
func wideEntries(losses []lab.LabLoss) []wideEntry {
	if lab.OnEveryLink(losses) {
		return []wideEntry{{everyLinkLoss, lossWhat(losses[0].Percent), losses}}
	}
	var out []wideEntry
	seen := map[string]bool{}
	for _, l := range losses {
		key := l.Link + " egress, both ends (the lab's loss)"
		if seen[key] { // two shares on one link: each its own
			key = fmt.Sprintf("%s egress, both ends (the lab's loss of %g%%)", l.Link, l.Percent)
		}
		seen[key] = true
		out = append(out, wideEntry{key, lossWhat(l.Percent), []lab.LabLoss{l}})
	}
	return out
}

// lossWhat is a loss of every packet as a run record says it.
func lossWhat(percent float64) string { return fmt.Sprintf("loss %g%% (tc BPF)", percent) }

// Where a cell group's own conditions are, as its run records key them.
const (
	cellLossWhere  = "r1-r2 egress, both ends"
	ipv6LossWhere  = "r1 eth-client ingress"
	ipv6DelayWhere = "r1 eth-client egress"
)

// ipv6LossWhat is a cell group's IPv6 loss (ipv6_loss, ipv6_udp_loss:
// DNS's ports spared, as sparedPorts says them) as a run record says it.
func ipv6LossWhat(percent float64, udp bool, spared string) string {
	if udp {
		return fmt.Sprintf("IPv6 UDP loss %g%%, DNS spared (%s; tc BPF)", percent, spared)
	}
	return fmt.Sprintf("IPv6 loss %g%% (tc BPF)", percent)
}

// ipv6DelayWhat is a cell group's IPv6 delay as a run record says it.
func ipv6DelayWhat(d time.Duration) string { return fmt.Sprintf("IPv6 delayed %v (netem)", d) }

// everyLinkLoss is a run record's links key for a lab loss of one share
// on every link end's egress.
const everyLinkLoss = "every link end's egress (the lab's loss)"

// wideKey names one link's lab loss at one share.
func wideKey(l lab.LabLoss) string { return fmt.Sprintf("%s %g", l.Link, l.Percent) }

// markWide notes what each lab loss had dropped when a run began.
func (c *conditions) markWide() {
	c.wideLost = map[string]uint64{}
	for _, l := range lab.LabLosses(c.lab, c.loss) {
		c.wideLost[wideKey(l)] = l.Dropped
	}
}

// loseOnLink puts the cell group's loss in place (or removes it).
func (c *conditions) loseOnLink(s *experiment.CellGroup) error {
	if c.loss != nil && c.loss.Percent == s.Loss {
		return nil
	}
	if c.loss != nil {
		c.loss.Close()
		c.loss = nil
	}
	if s.Loss > 0 {
		ll, err := lab.LoseOnLink(c.lab, s.Loss)
		if err != nil {
			return err
		}
		c.loss = ll
	}
	return nil
}

// delayIPv6 puts the cell group's IPv6 delay in place (or removes it).
func (c *conditions) delayIPv6(s *experiment.CellGroup) error {
	want := time.Duration(s.IPv6Delay)
	if c.delay != nil && c.delay.D == want {
		return nil
	}
	if c.delay != nil {
		if err := c.delay.Close(); err != nil {
			return err
		}
		c.delay = nil
	}
	if want > 0 {
		dl, err := lab.DelayIPv6(c.lab, want)
		if err != nil {
			return err
		}
		c.delay = dl
	}
	return nil
}

// impairIPv6 puts the cell group's IPv6 loss in place (or removes it).
func (c *conditions) impairIPv6(s *experiment.CellGroup) error {
	percent, udp := s.IPv6Loss, s.IPv6UDPLoss > 0
	if udp {
		percent = s.IPv6UDPLoss
	}
	if c.impair != nil && c.impair.Percent == percent && c.impair.UDP == udp {
		return nil
	}
	if c.delay != nil {
		c.delay.Close()
		c.delay = nil
	}
	if c.impair != nil {
		c.impair.Close()
		c.impair = nil
	}
	if percent > 0 {
		impair := lab.ImpairIPv6
		if udp {
			impair = func(name string, p float64) (*lab.Impairment, error) {
				return lab.ImpairIPv6UDP(name, p, c.dnsPorts()...)
			}
		}
		im, err := impair(c.lab, percent)
		if err != nil {
			return err
		}
		c.impair = im
	}
	return nil
}

// reshape gives the links the cell group's rate (or the lab's own), when
// that is not what they have.
func (c *conditions) reshape(s *experiment.CellGroup) error {
	if c.rates == nil || (c.links != nil && s.LinkRate == c.cur) {
		return nil
	}
	want := c.rates
	if s.LinkRate > 0 {
		want = map[string]lab.Shaping{}
		for _, name := range lab.LinkNames {
			want[name] = lab.Shaping{Rate: s.LinkRate}
		}
	}
	links, err := lab.Reshape(c.lab, want)
	if err != nil {
		return err
	}
	c.links, c.cur = shapedEnds(links), s.LinkRate
	return nil
}

// shapedEnds are the link ends of links (each end's root qdisc, as
// lab.Reshape reads them back) that a rate shapes: an unshaped end
// (noqueue, or no root qdisc) is what the result header's links say
// ("unshaped"), not a condition of the group's own, so its record and
// report.txt's conditions line leave it out, as the dry run does.
func shapedEnds(links map[string]string) map[string]string {
	out := map[string]string{}
	for end, q := range links {
		if q != "" && q != "none" && q != "noqueue" {
			out[end] = q
		}
	}
	return out
}

func (c *conditions) Begin(ctx context.Context, s *experiment.CellGroup, _ experiment.Step) error {
	if err := c.reshape(s); err != nil {
		return err
	}
	if err := c.impairIPv6(s); err != nil {
		return err
	}
	if err := c.delayIPv6(s); err != nil {
		return err
	}
	if err := c.pmtu.begin(s); err != nil {
		return err
	}
	if err := c.loseOnLink(s); err != nil {
		return err
	}
	if c.loss != nil {
		c.lost = c.loss.Dropped()
	}
	if c.wide {
		c.markWide()
	}
	if c.impair != nil {
		c.dropped, _ = c.impair.Counters()
	}
	if c.bg != nil {
		if err := c.bg.Set(ctx, s.Background); err != nil {
			return err
		}
		c.bg.Mark()
	}
	if s.ServerCapture && c.server != nil {
		port := c.ports[s.WireKey()]
		time.Sleep(capture.Quiet)
		c.tracker.Reset(port)
		c.server.Reset(capture.Filter{Port: port})
	}
	return nil
}

func (c *conditions) End(s *experiment.CellGroup, _ experiment.Step, rec *result.Run, samples []result.Sample) {
	if c.bg != nil {
		rec.Background = c.bg.Since()
	}
	if len(c.links) > 0 {
		rec.Links = c.links
	}
	if c.impair != nil {
		dropped, _ := c.impair.Counters()
		rec.Links = maps.Clone(rec.Links)
		if rec.Links == nil {
			rec.Links = map[string]string{}
		}
		what := "IPv6 packet"
		if c.impair.UDP {
			what = "IPv6 UDP datagram"
		}
		rec.Links[ipv6LossWhere] = fmt.Sprintf("%s: %s dropped in the run", ipv6LossWhat(c.impair.Percent, c.impair.UDP, sparedPorts(c.impair.DNSPorts)), stats.Count(dropped-c.dropped, what))
	}
	if c.loss != nil {
		rec.Links = maps.Clone(rec.Links)
		if rec.Links == nil {
			rec.Links = map[string]string{}
		}
		rec.Links[cellLossWhere] = fmt.Sprintf("%s: %s dropped in the run", lossWhat(c.loss.Percent), stats.Count(c.loss.Dropped()-c.lost, "packet"))
	}
	if c.delay != nil {
		rec.Links = maps.Clone(rec.Links)
		if rec.Links == nil {
			rec.Links = map[string]string{}
		}
		rec.Links[ipv6DelayWhere] = ipv6DelayWhat(c.delay.D)
	}
	c.wideLoss(rec)
	c.pmtu.end(s, rec)
	if !s.ServerCapture || c.server == nil {
		return
	}
	// The client's last ACK reaches the server after the client is done.
	time.Sleep(capture.Quiet)
	c.server.Drain()
	for i := range samples {
		smp := &samples[i]
		local, err := netip.ParseAddrPort(smp.Local)
		if err != nil || !smp.OK() {
			continue
		}
		tl, ok := c.tracker.Take(local)
		if !ok || !tl.Complete() {
			continue
		}
		if smp.Metrics == nil {
			smp.Metrics = map[string]float64{}
		}
		smp.Metrics["server_delay_ms"] = float64(tl.Delay()) / 1e6
		// The server's sending direction, as the study reported it (a
		// sum of both directions read above the link rate); the other
		// direction beside it.
		smp.Metrics["server_throughput_mbps"] = tl.OutMbps()
		smp.Metrics["server_in_mbps"] = tl.InMbps()
		smp.Metrics["server_bytes"] = float64(tl.Bytes)
		smp.Metrics["server_retransmissions"] = float64(tl.Retransmissions)
	}
}

func (c *conditions) Finish() {
	c.pmtu.finish()
	if c.impair != nil {
		c.impair.Close()
		c.impair = nil
	}
	if c.loss != nil {
		c.loss.Close()
		c.loss = nil
	}
	if c.bg != nil {
		c.bg.Set(context.Background(), "")
	}
}

// dnsPorts are the ports of the lab's DNS servers the run's transactions
// ask (their lookups must pass an IPv6 UDP impairment as port 53's do),
// sorted, each once.
func (c *conditions) dnsPorts() []uint16 {
	var out []uint16
	for _, port := range c.lookups {
		if port != 0 && port != 53 && !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	slices.Sort(out)
	return out
}

// sparedPorts names the UDP ports an IPv6 UDP impairment passes.
func sparedPorts(ports []uint16) string {
	s := "UDP port 53"
	if len(ports) > 0 {
		s = "UDP ports 53"
		for _, p := range ports {
			s += fmt.Sprintf(", %d", p)
		}
		s += " (the lab's DNS)"
	}
	return s
}
