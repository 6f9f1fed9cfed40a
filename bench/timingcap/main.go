// Command timingcap checks v6lab's clock against the wire, for
// bench/timing-vs-capture. It shares nothing with v6lab's timing code:
//
//	timingcap capture -ns GLOB -o FILE.pcap
//	    waits for a network namespace matching GLOB (/run/netns/GLOB) to
//	    appear, enters it and writes every frame of its one non-loopback
//	    interface, with the kernel's timestamps, to FILE.pcap until
//	    SIGTERM or SIGINT. Frames come through a TPACKET_V3 ring a block
//	    at a time, so the capture does not wake for every packet on the
//	    CPUs v6lab measures on.
//	timingcap analyze -pcap FILE.pcap -samples samples.jsonl
//	    decodes the capture with gopacket, matches every completed sample
//	    to its DNS query and TCP connection, and prints per path and
//	    connection count the distributions of lead (start → the query
//	    leaves), tail (the last byte arrives → end) and total − wire,
//	    the client's turns, and where wire_ns ends against the server's
//	    FIN.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/wire/pktring"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/vishvananda/netns"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: timingcap capture|analyze ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "capture":
		err = capture(os.Args[2:])
	case "analyze":
		err = analyze(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "timingcap:", err)
		os.Exit(1)
	}
}

func capture(args []string) error {
	fs := flag.NewFlagSet("capture", flag.ExitOnError)
	glob := fs.String("ns", "v6lab-run*-client", "namespace name pattern")
	out := fs.String("o", "capture.pcap", "pcap file")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the namespace")
	fs.Parse(args)
	var ns string
	for deadline := time.Now().Add(*wait); ns == ""; time.Sleep(2 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join("/run/netns", *glob)); len(m) > 0 {
			ns = m[0]
		} else if time.Now().After(deadline) {
			return fmt.Errorf("no namespace %s appeared within %v", *glob, *wait)
		}
	}
	runtime.LockOSThread()
	h, err := netns.GetFromPath(ns)
	if err != nil {
		return err
	}
	if err := netns.Set(h); err != nil {
		return err
	}
	ifname, err := waitInterface(10 * time.Second)
	if err != nil {
		return err
	}
	fd, err := pktring.Socket(ifname)
	if err != nil {
		return err
	}
	ring, err := pktring.New(fd, pktring.Config{Snap: snap, Retire: retire, BlockSize: blockSize, Blocks: blocks})
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 4<<20)
	w := pcapgo.NewWriterNanos(bw) // the kernel's stamps are in ns
	if err := w.WriteFileHeader(snap, layers.LinkTypeEthernet); err != nil {
		return err
	}
	var mu sync.Mutex
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		// The block being filled reaches this process when the kernel
		// retires it: wait for that before writing the last frames out.
		time.Sleep(3 * retire)
		mu.Lock()
		if frames, drops, err := ring.Stats(); err == nil {
			fmt.Fprintf(os.Stderr, "timingcap: %d frames, %d dropped by the kernel\n", frames, drops)
		}
		bw.Flush()
		f.Close()
		os.Exit(0)
	}()
	fmt.Fprintf(os.Stderr, "timingcap: capturing on %s in %s\n", ifname, ns)
	for {
		ring.Wait(-1)
		mu.Lock()
		ring.Read(func(at time.Time, data []byte, wireLen int) {
			w.WritePacket(gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(data), Length: wireLen}, data)
		})
		mu.Unlock()
	}
}

// snap is how much of each frame is kept: every header v6lab's packets
// carry, and a DNS message.
const snap = 256

// The capture must not measure itself into v6lab's figures: a socket read
// per frame woke this process for every packet of the run, on the same
// two CPUs as the client, and doubled v6lab's own time at one connection
// (total − wire_ns 18-22 µs alone, 38-65 µs beside such a capture). A
// TPACKET_V3 ring (pktring, which v6lab's wire check reads too: frames
// and their kernel stamps, nothing of v6lab's timing) hands over frames a
// block at a time instead: this process wakes when a block is full or
// retire has passed.
const (
	retire    = 100 * time.Millisecond
	blockSize = 1 << 20
	blocks    = 64 // 64 MiB: 200,000 frames, seconds of 100 connections'
)

// waitInterface finds the namespace's one interface that is up and not
// loopback (the lab adds it after the namespace).
func waitInterface(wait time.Duration) (string, error) {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ifs, _ := net.Interfaces()
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
				return i.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface came up")
}

// dnsQuery is one query seen on the wire and its reply.
type dnsQuery struct {
	src     netip.AddrPort
	id      uint16
	sent    time.Time
	replied time.Time
	used    bool
}

// conn is one TCP connection from the client.
type conn struct {
	syn, lastIn time.Time
	finIn       time.Time // the server's FIN
	// turns sums, over each request that follows a reply, the gap from
	// the reply's last packet in to the request's first packet out.
	turns   time.Duration
	replied bool // the last data packet was toward the client
}

type sample struct {
	Kind      string    `json:"kind"`
	Proto     string    `json:"proto"`
	Path      string    `json:"path"`
	Conns     int       `json:"conns"`
	Warmup    bool      `json:"warmup"`
	Local     string    `json:"local"`
	DNSLocal  string    `json:"dns_local"`
	Start     time.Time `json:"start"`
	ResolveNS int64     `json:"resolve_ns"`
	TotalNS   int64     `json:"total_ns"`
	WireNS    int64     `json:"wire_ns"`
	TurnNS    int64     `json:"client_turn_ns"`
	Err       string    `json:"err"`
}

func analyze(args []string) error {
	fs := flag.NewFlagSet("analyze", flag.ExitOnError)
	pcapFile := fs.String("pcap", "capture.pcap", "capture")
	samplesFile := fs.String("samples", "samples.jsonl.zst", "v6lab's samples (samples.jsonl.zst, or plain samples.jsonl)")
	fs.Parse(args)
	queries, conns, err := decode(*pcapFile)
	if err != nil {
		return err
	}
	samples, err := readSamples(*samplesFile)
	if err != nil {
		return err
	}
	f := newFigures()
	for _, s := range samples {
		f.add(s, queries, conns)
	}
	keys := f.keys()
	worst := f.printOverhead(keys)
	fmt.Printf("unmatched samples: %d (%d without their connection, %d without their query; warm-up runs left out)\n", f.noConn+f.noQuery, f.noConn, f.noQuery)
	f.printTurns(keys)
	f.printFIN(keys)
	if v, ok := worst[1]; ok {
		fmt.Printf("ratio overhead_p50_c1_vs_50us %.2f\n", v/50)
	}
	for _, n := range []int{10, 100} {
		if v, ok := worst[n]; ok {
			fmt.Printf("ratio overhead_p50_c%d_vs_2pct %.2f\n", n, v/2)
		}
	}
	return nil
}

// readSamples reads v6lab's completed samples, in the order their lookups
// ended: queries are matched to samples in that order (the reply that
// arrived last before a lookup's end, of its family). Warm-up runs are
// left out, as from v6lab's figures: the first may begin before the
// capture is ready.
func readSamples(name string) ([]sample, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	text, err := result.Decompress(f)
	if err != nil {
		return nil, err
	}
	defer text.Close()
	var samples []sample
	sc := bufio.NewScanner(text)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var s sample
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.Kind != "sample" || s.Err != "" || s.Local == "" || s.Warmup {
			continue
		}
		samples = append(samples, s)
	}
	sort.Slice(samples, func(i, j int) bool {
		return samples[i].Start.Add(time.Duration(samples[i].ResolveNS)).Before(samples[j].Start.Add(time.Duration(samples[j].ResolveNS)))
	})
	return samples, nil
}

// key is a row of the tables: a path at a connection count.
type key struct {
	path  string
	conns int
}

// dists are a figure's values (µs) per row.
type dists map[key][]float64

func (d dists) add(k key, v float64) { d[k] = append(d[k], v) }

// figures are the samples measured against the wire.
type figures struct {
	// lead: start → the first query out; tail: the last byte in → end;
	// over: total − wire; kern: wire_ns − wire.
	lead, tail, over, wire, kern, totals dists
	// turns: the client's turns seen on the wire; turnDiff:
	// client_turn_ns − turns; synTurn: the DNS answer in → the SYN out.
	turns, turnDiff, synTurn dists
	// finGap: the server's FIN − the last byte; toFIN: wire_ns − the wire
	// time to the FIN.
	finGap, toFIN   dists
	noConn, noQuery int // samples without their connection, their query
}

func newFigures() *figures {
	return &figures{lead: dists{}, tail: dists{}, over: dists{}, wire: dists{}, kern: dists{}, totals: dists{},
		turns: dists{}, turnDiff: dists{}, synTurn: dists{}, finGap: dists{}, toFIN: dists{}}
}

// add matches a sample to its TCP connection (by its local address and
// time) and its DNS query, and adds what the wire says of it.
func (f *figures) add(s sample, queries []*dnsQuery, conns map[netip.AddrPort][]*conn) {
	local, err := netip.ParseAddrPort(s.Local)
	if err != nil {
		return
	}
	end := s.Start.Add(time.Duration(s.TotalNS))
	c := connOf(conns[local], s.Start, end)
	if c == nil || c.lastIn.IsZero() {
		f.noConn++
		return
	}
	first, capTurns := c.syn, c.turns
	var answerToSYN time.Duration
	if s.ResolveNS > 0 {
		q := lastReply(queries, s.Start, s.Start.Add(time.Duration(s.ResolveNS)), local.Addr().Is4(), s.DNSLocal)
		if q == nil {
			f.noQuery++
			return
		}
		q.used = true
		first = firstSent(queries, q, s.Start)
		if !q.replied.IsZero() && c.syn.After(q.replied) {
			answerToSYN = c.syn.Sub(q.replied) // the answer in → the SYN out
			capTurns += answerToSYN
		}
	}
	k := key{s.Path, s.Conns}
	w := c.lastIn.Sub(first)
	f.lead.add(k, us(first.Sub(s.Start)))
	f.tail.add(k, us(end.Sub(c.lastIn)))
	f.over.add(k, us(time.Duration(s.TotalNS)-w))
	f.wire.add(k, us(w))
	f.totals.add(k, us(time.Duration(s.TotalNS)))
	if s.WireNS > 0 {
		f.kern.add(k, us(time.Duration(s.WireNS)-w))
		if !c.finIn.IsZero() && c.finIn.After(c.lastIn) {
			f.finGap.add(k, us(c.finIn.Sub(c.lastIn)))
			f.toFIN.add(k, us(time.Duration(s.WireNS)-c.finIn.Sub(first)))
		}
	}
	if answerToSYN > 0 {
		f.synTurn.add(k, us(answerToSYN))
	}
	if capTurns > 0 {
		f.turns.add(k, us(capTurns))
		if s.TurnNS > 0 {
			f.turnDiff.add(k, us(time.Duration(s.TurnNS)-capTurns))
		}
	}
}

// keys are the rows, by connection count and then path.
func (f *figures) keys() []key {
	var keys []key
	for k := range f.over {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].conns != keys[j].conns {
			return keys[i].conns < keys[j].conns
		}
		return keys[i].path < keys[j].path
	})
	return keys
}

// printOverhead prints v6lab's own time per row (total − wire, and where
// it lies: lead and tail) and returns, per connection count, the worst
// row's figure its target speaks of: the median in µs at one connection,
// the median as a share of the mean total above.
func (f *figures) printOverhead(keys []key) map[int]float64 {
	fmt.Printf("%-7s %5s %6s  %-22s %-22s %-26s %-10s %s\n", "path", "conns", "n", "lead µs p50/p90/max", "tail µs p50/p90/max", "total−wire µs p50/p90/max", "of total", "wire_ns−wire µs p50/min/max (n)")
	worst := map[int]float64{}
	for _, k := range keys {
		o := f.over[k]
		pct := median(o) / mean(f.totals[k]) * 100
		fmt.Printf("%-7s %5d %6d  %-22s %-22s %-26s %-10s %s\n", k.path, k.conns, len(o), dist(f.lead[k]), dist(f.tail[k]), dist(o), fmt.Sprintf("%.1f%%", pct), spread(f.kern[k]))
		if k.conns == 1 {
			worst[1] = max(worst[1], median(o))
		} else {
			worst[k.conns] = max(worst[k.conns], pct)
		}
	}
	return worst
}

// printTurns prints the client's turns inside the wire time: a reply's
// last packet in to the next request's first packet out on the same
// connection, and the DNS answer in to the SYN out, against v6lab's
// client_turn_ns (which ends at the send or connect call).
func (f *figures) printTurns(keys []key) {
	if len(f.turns) == 0 {
		return
	}
	fmt.Printf("%-7s %5s  %-26s %-26s %s\n", "path", "conns", "client turns µs p50/p90/max", "of which answer→SYN", "client_turn_ns−turns µs p50/min/max (n)")
	for _, k := range keys {
		if len(f.turns[k]) == 0 {
			continue
		}
		syn := "none"
		if v := f.synTurn[k]; len(v) > 0 {
			syn = dist(v)
		}
		fmt.Printf("%-7s %5d  %-26s %-26s %s\n", k.path, k.conns, dist(f.turns[k]), syn, spread(f.turnDiff[k]))
	}
}

// printFIN prints where wire_ns ends when the server's FIN follows the
// last byte: a FIN that arrives before the client reads is merged into
// the queued data, and the read carries the FIN's stamp.
func (f *figures) printFIN(keys []key) {
	if len(f.finGap) == 0 {
		return
	}
	fmt.Printf("%-7s %5s  %-26s %-30s %s\n", "path", "conns", "FIN − last byte µs p50/p90", "wire_ns − wire to FIN µs p50", "wire_ns ends at the FIN (±3 µs)")
	for _, k := range keys {
		g, t := f.finGap[k], f.toFIN[k]
		if len(g) == 0 {
			continue
		}
		at := 0
		for _, x := range t {
			if x >= -3 && x <= 3 {
				at++
			}
		}
		fmt.Printf("%-7s %5d  %-26s %-30s %d of %d\n", k.path, k.conns, fmt.Sprintf("%.0f / %.0f", percentile(g, 50), percentile(g, 90)), fmt.Sprintf("%.0f", percentile(t, 50)), at, len(t))
	}
}

// lastReply is the unused query of the family sent after start whose
// reply arrived last before resolved; from the address the sample names
// (dns_local), when it names one.
func lastReply(qs []*dnsQuery, start, resolved time.Time, v4 bool, from string) *dnsQuery {
	var best *dnsQuery
	for _, q := range qs {
		// A query from the address the sample names is its own whatever
		// the family (a dual-stack sample asks both on one socket).
		if q.used || from == "" && q.src.Addr().Is4() != v4 || q.replied.IsZero() || q.replied.After(resolved) {
			continue
		}
		if from != "" && q.src.String() != from || from == "" && q.sent.Before(start) {
			continue
		}
		if best == nil || q.replied.After(best.replied) {
			best = q
		}
	}
	return best
}

// firstSent is when the first query of q's lookup left: a dual-stack
// lookup sends its AAAA and A queries on one socket, and its wire time
// starts at the first of them.
func firstSent(qs []*dnsQuery, q *dnsQuery, start time.Time) time.Time {
	first := q.sent
	for _, o := range qs {
		if o.src == q.src && !o.sent.Before(start) && o.sent.Before(first) {
			first = o.sent
		}
	}
	return first
}

// connOf is the connection (ports are reused) whose SYN left within
// [start, end].
func connOf(cs []*conn, start, end time.Time) *conn {
	for _, c := range cs {
		if !c.syn.Before(start) && !c.syn.After(end) {
			return c
		}
	}
	return nil
}

func decode(name string) ([]*dnsQuery, map[netip.AddrPort][]*conn, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, nil, err
	}
	d := newDecoder()
	w := &wire{byID: map[string]*dnsQuery{}, conns: map[netip.AddrPort][]*conn{}}
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		d.decode(data)
		w.add(d, ci.Timestamp)
	}
	return w.queries, w.conns, nil
}

// decoder parses a frame's headers into layers it reuses (gopacket's
// DecodingLayerParser), and keeps what the capture's matching needs.
type decoder struct {
	eth     layers.Ethernet
	ip4     layers.IPv4
	ip6     layers.IPv6
	tcp     layers.TCP
	udp     layers.UDP
	dns     layers.DNS
	parser  *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	// Of the last frame decoded:
	src, dst            netip.Addr
	isTCP, isUDP, isDNS bool
}

func newDecoder() *decoder {
	d := &decoder{}
	d.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &d.eth, &d.ip4, &d.ip6, &d.tcp, &d.udp)
	d.parser.IgnoreUnsupported = true
	return d
}

func (d *decoder) decode(data []byte) {
	_ = d.parser.DecodeLayers(data, &d.decoded)
	d.src, d.dst = netip.Addr{}, netip.Addr{}
	d.isTCP, d.isUDP, d.isDNS = false, false, false
	for _, l := range d.decoded {
		switch l {
		case layers.LayerTypeIPv4:
			d.src, _ = netip.AddrFromSlice(d.ip4.SrcIP.To4())
			d.dst, _ = netip.AddrFromSlice(d.ip4.DstIP.To4())
		case layers.LayerTypeIPv6:
			d.src, _ = netip.AddrFromSlice(d.ip6.SrcIP)
			d.dst, _ = netip.AddrFromSlice(d.ip6.DstIP)
		case layers.LayerTypeTCP:
			d.isTCP = true
		case layers.LayerTypeUDP:
			// The embedded DNS server's port is not 53: decode
			// every datagram as DNS.
			d.isUDP = true
			d.isDNS = d.dns.DecodeFromBytes(d.udp.Payload, gopacket.NilDecodeFeedback) == nil
		}
	}
}

// wire is what the capture holds: every DNS query with its reply, and the
// client's TCP connections by its address (ports are reused).
type wire struct {
	queries []*dnsQuery
	byID    map[string]*dnsQuery
	conns   map[netip.AddrPort][]*conn
}

// add takes one decoded frame: a query or its reply, a SYN, the server's
// FIN, or data either way (toward the client, the reply's last byte;
// from it, a request that ends the client's turn).
func (w *wire) add(d *decoder, at time.Time) {
	tcp, udp, dns := &d.tcp, &d.udp, &d.dns
	switch {
	case d.isUDP && d.isDNS && !dns.QR:
		s := netip.AddrPortFrom(d.src, uint16(udp.SrcPort))
		q := &dnsQuery{src: s, id: dns.ID, sent: at}
		w.queries = append(w.queries, q)
		w.byID[fmt.Sprint(s, dns.ID)] = q
	case d.isUDP && d.isDNS && dns.QR:
		if q := w.byID[fmt.Sprint(netip.AddrPortFrom(d.dst, uint16(udp.DstPort)), dns.ID)]; q != nil && q.replied.IsZero() {
			q.replied = at
		}
	case d.isTCP && tcp.SYN && !tcp.ACK:
		k := netip.AddrPortFrom(d.src, uint16(tcp.SrcPort))
		w.conns[k] = append(w.conns[k], &conn{syn: at})
	case d.isTCP && tcp.FIN && len(w.conns[netip.AddrPortFrom(d.dst, uint16(tcp.DstPort))]) > 0:
		cs := w.conns[netip.AddrPortFrom(d.dst, uint16(tcp.DstPort))]
		if c := cs[len(cs)-1]; c.finIn.IsZero() {
			c.finIn = at
		}
		if len(tcp.Payload) > 0 {
			c := cs[len(cs)-1]
			c.lastIn, c.replied = at, true
		}
	case d.isTCP && len(tcp.Payload) > 0:
		if cs := w.conns[netip.AddrPortFrom(d.dst, uint16(tcp.DstPort))]; len(cs) > 0 {
			c := cs[len(cs)-1]
			c.lastIn, c.replied = at, true // data toward the client
		} else if cs := w.conns[netip.AddrPortFrom(d.src, uint16(tcp.SrcPort))]; len(cs) > 0 {
			c := cs[len(cs)-1] // data from the client: a request
			if c.replied {
				c.turns += at.Sub(c.lastIn)
			}
			c.replied = false
		}
	}
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func median(v []float64) float64 { return percentile(v, 50) }

func percentile(v []float64, p float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func dist(v []float64) string {
	return fmt.Sprintf("%.0f / %.0f / %.0f", percentile(v, 50), percentile(v, 90), percentile(v, 100))
}

// spread is a difference's median, least and most, and its count ("none"
// without values).
func spread(v []float64) string {
	if len(v) == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f (%d)", percentile(v, 50), percentile(v, 0), percentile(v, 100), len(v))
}
