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
	f, err := os.Open(*samplesFile)
	if err != nil {
		return err
	}
	defer f.Close()
	text, err := result.Decompress(f)
	if err != nil {
		return err
	}
	defer text.Close()
	type key struct {
		path  string
		conns int
	}
	lead, tail, over, wire, kern := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	totals, turns, turnDiff, synTurn := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	finGap, toFIN := map[key][]float64{}, map[key][]float64{}
	unmatched, noConn, noQuery := 0, 0, 0
	var samples []sample
	sc := bufio.NewScanner(text)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var s sample
		// Warm-up runs are left out, as from v6lab's figures: the first
		// may begin before the capture is ready.
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.Kind != "sample" || s.Err != "" || s.Local == "" || s.Warmup {
			continue
		}
		samples = append(samples, s)
	}
	// Queries are matched to samples in the order their lookups ended: the
	// reply that arrived last before a lookup's end, of its family.
	sort.Slice(samples, func(i, j int) bool {
		return samples[i].Start.Add(time.Duration(samples[i].ResolveNS)).Before(samples[j].Start.Add(time.Duration(samples[j].ResolveNS)))
	})
	for _, s := range samples {
		local, err := netip.ParseAddrPort(s.Local)
		if err != nil {
			continue
		}
		end := s.Start.Add(time.Duration(s.TotalNS))
		c := connOf(conns[local], s.Start, end)
		if c == nil || c.lastIn.IsZero() {
			unmatched++
			noConn++
			continue
		}
		first, capTurns := c.syn, c.turns
		var answerToSYN time.Duration
		if s.ResolveNS > 0 {
			q := lastReply(queries, s.Start, s.Start.Add(time.Duration(s.ResolveNS)), local.Addr().Is4(), s.DNSLocal)
			if q == nil {
				unmatched++
				noQuery++
				continue
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
		lead[k] = append(lead[k], us(first.Sub(s.Start)))
		tail[k] = append(tail[k], us(end.Sub(c.lastIn)))
		over[k] = append(over[k], us(time.Duration(s.TotalNS)-w))
		wire[k] = append(wire[k], us(w))
		totals[k] = append(totals[k], us(time.Duration(s.TotalNS)))
		if s.WireNS > 0 {
			kern[k] = append(kern[k], us(time.Duration(s.WireNS)-w))
			if !c.finIn.IsZero() && c.finIn.After(c.lastIn) {
				finGap[k] = append(finGap[k], us(c.finIn.Sub(c.lastIn)))
				toFIN[k] = append(toFIN[k], us(time.Duration(s.WireNS)-c.finIn.Sub(first)))
			}
		}
		if answerToSYN > 0 {
			synTurn[k] = append(synTurn[k], us(answerToSYN))
		}
		if capTurns > 0 {
			turns[k] = append(turns[k], us(capTurns))
			if s.TurnNS > 0 {
				turnDiff[k] = append(turnDiff[k], us(time.Duration(s.TurnNS)-capTurns))
			}
		}
	}
	var keys []key
	for k := range over {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].conns != keys[j].conns {
			return keys[i].conns < keys[j].conns
		}
		return keys[i].path < keys[j].path
	})
	fmt.Printf("%-7s %5s %6s  %-22s %-22s %-26s %-10s %s\n", "path", "conns", "n", "lead µs p50/p90/max", "tail µs p50/p90/max", "total−wire µs p50/p90/max", "of total", "wire_ns−wire µs p50/min/max (n)")
	worst := map[int]float64{}
	for _, k := range keys {
		o := over[k]
		pct := median(o) / mean(totals[k]) * 100
		kd := "none"
		if v := kern[k]; len(v) > 0 {
			kd = fmt.Sprintf("%.0f / %.0f / %.0f (%d)", percentile(v, 50), percentile(v, 0), percentile(v, 100), len(v))
		}
		fmt.Printf("%-7s %5d %6d  %-22s %-22s %-26s %-10s %s\n", k.path, k.conns, len(o), dist(lead[k]), dist(tail[k]), dist(o), fmt.Sprintf("%.1f%%", pct), kd)
		if k.conns == 1 {
			worst[1] = max(worst[1], median(o))
		} else {
			worst[k.conns] = max(worst[k.conns], pct)
		}
	}
	fmt.Printf("unmatched samples: %d (%d without their connection, %d without their query; warm-up runs left out)\n", unmatched, noConn, noQuery)
	if len(turns) > 0 {
		// The client's turns inside the wire time: a reply's last packet in
		// to the next request's first packet out on the same connection,
		// and the DNS answer in to the SYN out, against v6lab's
		// client_turn_ns (which ends at the send or connect call).
		fmt.Printf("%-7s %5s  %-26s %-26s %s\n", "path", "conns", "client turns µs p50/p90/max", "of which answer→SYN", "client_turn_ns−turns µs p50/min/max (n)")
		for _, k := range keys {
			if len(turns[k]) == 0 {
				continue
			}
			d := "none"
			if v := turnDiff[k]; len(v) > 0 {
				d = fmt.Sprintf("%.0f / %.0f / %.0f (%d)", percentile(v, 50), percentile(v, 0), percentile(v, 100), len(v))
			}
			syn := "none"
			if v := synTurn[k]; len(v) > 0 {
				syn = dist(v)
			}
			fmt.Printf("%-7s %5d  %-26s %-26s %s\n", k.path, k.conns, dist(turns[k]), syn, d)
		}
	}
	if len(finGap) > 0 {
		// Where wire_ns ends when the server's FIN follows the last byte:
		// a FIN that arrives before the client reads is merged into the
		// queued data, and the read carries the FIN's stamp.
		fmt.Printf("%-7s %5s  %-26s %-30s %s\n", "path", "conns", "FIN − last byte µs p50/p90", "wire_ns − wire to FIN µs p50", "wire_ns ends at the FIN (±3 µs)")
		for _, k := range keys {
			g, f := finGap[k], toFIN[k]
			if len(g) == 0 {
				continue
			}
			at := 0
			for _, x := range f {
				if x >= -3 && x <= 3 {
					at++
				}
			}
			fmt.Printf("%-7s %5d  %-26s %-30s %d of %d\n", k.path, k.conns, fmt.Sprintf("%.0f / %.0f", percentile(g, 50), percentile(g, 90)), fmt.Sprintf("%.0f", percentile(f, 50)), at, len(f))
		}
	}
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
	var queries []*dnsQuery
	byID := map[string]*dnsQuery{}
	conns := map[netip.AddrPort][]*conn{}
	var eth layers.Ethernet
	var ip4 layers.IPv4
	var ip6 layers.IPv6
	var tcp layers.TCP
	var udp layers.UDP
	var dns layers.DNS
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &tcp, &udp)
	parser.IgnoreUnsupported = true
	var decoded []gopacket.LayerType
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		_ = parser.DecodeLayers(data, &decoded)
		var src, dst netip.Addr
		isTCP, isUDP, isDNS := false, false, false
		for _, l := range decoded {
			switch l {
			case layers.LayerTypeIPv4:
				src, _ = netip.AddrFromSlice(ip4.SrcIP.To4())
				dst, _ = netip.AddrFromSlice(ip4.DstIP.To4())
			case layers.LayerTypeIPv6:
				src, _ = netip.AddrFromSlice(ip6.SrcIP)
				dst, _ = netip.AddrFromSlice(ip6.DstIP)
			case layers.LayerTypeTCP:
				isTCP = true
			case layers.LayerTypeUDP:
				// The embedded DNS server's port is not 53: decode
				// every datagram as DNS.
				isUDP = true
				isDNS = dns.DecodeFromBytes(udp.Payload, gopacket.NilDecodeFeedback) == nil
			}
		}
		switch {
		case isUDP && isDNS && !dns.QR:
			s := netip.AddrPortFrom(src, uint16(udp.SrcPort))
			q := &dnsQuery{src: s, id: dns.ID, sent: ci.Timestamp}
			queries = append(queries, q)
			byID[fmt.Sprint(s, dns.ID)] = q
		case isUDP && isDNS && dns.QR:
			if q := byID[fmt.Sprint(netip.AddrPortFrom(dst, uint16(udp.DstPort)), dns.ID)]; q != nil && q.replied.IsZero() {
				q.replied = ci.Timestamp
			}
		case isTCP && tcp.SYN && !tcp.ACK:
			k := netip.AddrPortFrom(src, uint16(tcp.SrcPort))
			conns[k] = append(conns[k], &conn{syn: ci.Timestamp})
		case isTCP && tcp.FIN && len(conns[netip.AddrPortFrom(dst, uint16(tcp.DstPort))]) > 0:
			cs := conns[netip.AddrPortFrom(dst, uint16(tcp.DstPort))]
			if c := cs[len(cs)-1]; c.finIn.IsZero() {
				c.finIn = ci.Timestamp
			}
			if len(tcp.Payload) > 0 {
				c := cs[len(cs)-1]
				c.lastIn, c.replied = ci.Timestamp, true
			}
		case isTCP && len(tcp.Payload) > 0:
			if cs := conns[netip.AddrPortFrom(dst, uint16(tcp.DstPort))]; len(cs) > 0 {
				c := cs[len(cs)-1]
				c.lastIn, c.replied = ci.Timestamp, true // data toward the client
			} else if cs := conns[netip.AddrPortFrom(src, uint16(tcp.SrcPort))]; len(cs) > 0 {
				c := cs[len(cs)-1] // data from the client: a request
				if c.replied {
					c.turns += ci.Timestamp.Sub(c.lastIn)
				}
				c.replied = false
			}
		}
	}
	return queries, conns, nil
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
