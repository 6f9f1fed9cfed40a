// Package result holds what v6lab measures — one Sample per transaction, one
// Run record per run, a Header that explains the experiment — and the
// versioned JSON-lines format they are stored in.
//
// It imports nothing of v6lab.
package result

import (
	"encoding/json"
	"strconv"
	"time"
)

// FormatVersion is written in every header; readers refuse newer ones
// and read every older one. 2 added wire_ns and dns_local to samples
// (absent in version 1 files, which read as they always did); 3 added a
// segment's and a merge's header fields and a run's slot and lateness; 4
// a sample's wire_first_byte_ns; 5 its client_turn_ns; 6 the header's
// sample_every and a run's totals (and files are written compressed,
// samples.jsonl.zst, which every version's reader here takes); 7 a
// survey's site records (target sites); 8 a run's totals' conn (what the
// connections of a file that keeps some rows did: kept, resumed, ...).
const FormatVersion = 8

// Line kinds in samples.jsonl.
const (
	KindHeader = "header"
	KindRun    = "run"
	KindSample = "sample"
	// KindSite is a survey's record of one site (Site).
	KindSite = "site"
)

// Sample is one transaction: from before its name lookup to its completion
// marker. A failed transaction is a Sample with Err set; it is counted, never
// averaged as a time.
type Sample struct {
	Kind     string `json:"kind"`
	Cell     string `json:"cell"`
	Protocol string `json:"proto"`
	Path     string `json:"path"`
	Conns    int    `json:"conns"`
	Run      int    `json:"run"`
	Warmup   bool   `json:"warmup,omitempty"`
	User     int    `json:"user"`
	// Local and Remote are the addresses actually used ("ip:port").
	Local  string `json:"local,omitempty"`
	Remote string `json:"remote,omitempty"`
	// DNSLocal is the address the transaction's DNS query left from.
	DNSLocal string    `json:"dns_local,omitempty"`
	Start    time.Time `json:"start"`
	// Phase ends, measured from Start on the monotonic clock, in
	// nanoseconds; zero when a phase did not happen.
	ResolveNS   int64 `json:"resolve_ns,omitempty"`
	ConnectNS   int64 `json:"connect_ns,omitempty"`
	TLSNS       int64 `json:"tls_ns,omitempty"`
	FirstByteNS int64 `json:"first_byte_ns,omitempty"`
	// TotalNS is the response time: Start to completion marker, or to
	// the failure.
	TotalNS int64 `json:"total_ns"`
	// WireNS is the network's share of a completed transaction by the
	// kernel's own timestamps: from its first packet leaving the host (the
	// DNS query, or the SYN without a lookup) to the last needed bytes
	// arriving (absent where the kernel gave none).
	WireNS int64 `json:"wire_ns,omitempty"`
	// WireFirstByteNS is, on the same clock, from that first packet out
	// to the arrival of the reply's first byte (the phase first_byte_ns
	// ends, by the kernel's receive stamp).
	WireFirstByteNS int64 `json:"wire_first_byte_ns,omitempty"`
	// ClientTurnNS is the client's own time inside wire_ns: from a reply's
	// arrival (the kernel's receive stamp) to the next request's send on
	// the same connection, summed over the transaction's turns
	// (docs/metrics.md says which are counted).
	ClientTurnNS int64 `json:"client_turn_ns,omitempty"`
	BytesIn      int64 `json:"bytes_in,omitempty"`
	BytesOut     int64 `json:"bytes_out,omitempty"`
	// Negotiated is the application protocol the transaction spoke, for a
	// cell that names its HTTP version: http/1.1, h2 (ALPN), h2c (by
	// prior knowledge) or h3 (QUIC).
	Negotiated string `json:"negotiated,omitempty"`
	// What the transaction's connection did, as typed fields (the marker
	// says it in words; the report's labels and compare read these):
	// TLS is the TLS version it spoke ("TLS 1.3"), Kept that it ran on a
	// connection kept from the user's earlier transaction (no lookup, no
	// handshake), Resumed that its TLS session was resumed, ZeroRTT that
	// its request left in 0-RTT early data.
	TLS     string `json:"tls,omitempty"`
	Kept    bool   `json:"kept,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	ZeroRTT bool   `json:"zero_rtt,omitempty"`
	// Again is how many of its requests went again on a new connection
	// (HTTP/2: those the server's GOAWAY or REFUSED_STREAM said it did not
	// process, or all of them when the server closed a kept connection
	// idle under it; a request sent again twice counts twice), its time
	// including the new connections.
	Again int `json:"again,omitempty"`
	// AgainConns is on how many new connections they went (more than one:
	// each new connection's server processed some of them and said GOAWAY
	// again, its limit of requests a connection below one page's).
	AgainConns int `json:"again_conns,omitempty"`
	// Marker is the completion marker seen (e.g. "200 OK" with every byte),
	// empty when the transaction did not complete.
	Marker string `json:"marker,omitempty"`
	// Err is why the transaction failed; ErrKind groups failures
	// (ErrKinds: timeout, stall, refused, reset, family, resolve,
	// protocol, resource, io, loss).
	Err     string  `json:"err,omitempty"`
	ErrKind ErrKind `json:"err_kind,omitempty"`
	// Metrics are a transport test's figures (throughput_mbps,
	// retransmits, loss_pct, jitter_ms, …; see docs/metrics.md).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Intervals are a transport test's per-interval figures.
	Intervals []Interval `json:"intervals,omitempty"`
}

// Interval is one reporting interval of a transport test.
type Interval struct {
	// StartNS and EndNS are measured from the sample's start.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// Bytes delivered in the interval (TCP: acknowledged; UDP: received).
	Bytes int64 `json:"bytes"`
	// TCP: retransmitted segments, smoothed RTT (µs) and congestion window
	// (segments) at the interval's end.
	Retrans uint32 `json:"retrans,omitempty"`
	RTTUS   uint32 `json:"rtt_us,omitempty"`
	Cwnd    uint32 `json:"cwnd,omitempty"`
	// Omitted marks an interval of the warm-up the figures leave out.
	Omitted bool `json:"omitted,omitempty"`
}

// OK reports whether the transaction completed.
func (s *Sample) OK() bool { return s.Err == "" }

// Total is the response time.
func (s *Sample) Total() time.Duration { return time.Duration(s.TotalNS) }

// RewarmIndex is the seq of every re-warm run before the plan's step seq,
// and the run number of the first (negative: no run of the plan has it).
func RewarmIndex(seq int) int { return -1 - seq }

// RewarmRun is the run number of the nth re-warm run (0: the first) before
// step seq of a plan of steps steps: RewarmIndex(seq) less nth × steps, so
// that a step re-warmed by two resumes (the first interrupted after its
// re-warm) has two runs, never one number twice in a file.
func RewarmRun(seq, nth, steps int) int { return RewarmIndex(seq) - nth*steps }

// Run records one run of one cell: its place in the order and its outcome.
type Run struct {
	Kind     string `json:"kind"`
	Cell     string `json:"cell"`
	Protocol string `json:"proto"`
	Path     string `json:"path"`
	Conns    int    `json:"conns"`
	Run      int    `json:"run"`
	Warmup   bool   `json:"warmup,omitempty"`
	// Rewarm marks a warm-up a resumed experiment ran again before a
	// cell's first counted run in the new process (its connections,
	// sessions and caches are cold again): no step of the plan, its Seq
	// is RewarmIndex of the step it preceded, its Run RewarmRun (unique
	// in the file, however often that step was re-warmed).
	Rewarm    bool      `json:"rewarm,omitempty"`
	Seq       int       `json:"seq"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
	// Wire is what a capture counted on the lab's tunnel link during the
	// run (lab runs only).
	Wire *Wire `json:"wire,omitempty"`
	// Background is the congestion that ran beside the run (lab runs of
	// cells with a background level).
	Background *Background `json:"background,omitempty"`
	// Links are the lab's links during the run, read back from the
	// kernel (link end: root qdisc), when cell groups set their own link
	// rate (link_rate).
	Links map[string]string `json:"links,omitempty"`
	// Slot is when the run was scheduled to start (--start-at), and
	// LateNS how long after it its load started when more than
	// LateAfter: a segment that fell behind says so.
	Slot   time.Time `json:"slot,omitzero"`
	LateNS int64     `json:"late_ns,omitempty"`
	// EarlyNS is how long before its slot the run started, when more
	// than LateAfter: a resume by a v6lab before 2026-11-27 ran the runs
	// left back to back, before their slots, so with none of the other
	// segments' runs (trial7 F6). v6lab merge sets it from the schedule
	// for such a run; a run of this version waits for its slot.
	EarlyNS int64 `json:"early_ns,omitempty"`
	// Load is the run's self-check: the client's and the host's CPU, and
	// whether either was saturated (load.go).
	Load *Load `json:"load,omitempty"`
	// Err is set when the run as a whole could not be done, or its wire
	// did not carry what the path claims; such a run is left out.
	Err string `json:"err,omitempty"`
	// Totals are the run's figures over every one of its samples, when
	// the writer kept only some of their rows (Header.SampleEvery).
	Totals *RunTotals `json:"totals,omitempty"`
}

// RunTotals are what the reports take from a run's samples, summed over
// every sample by the writer, so that a file that keeps one row of every
// few (sample_every) still gives every figure of all of them: counts,
// sums for the run's means, failures, and the response times' histogram.
type RunTotals struct {
	// Rows is how many of the run's samples have a row in the file.
	Rows int `json:"rows"`
	// Completed and Failed count every sample; SumNS is the sum of the
	// completed ones' total_ns (as the float the run mean divides).
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
	SumNS     float64 `json:"sum_ns"`
	// Sums and Counts are, per figure (metrics, wire_ms,
	// client_turn_ms), the sum over completed samples that had it and
	// how many had it.
	Sums   map[string]float64 `json:"sums,omitempty"`
	Counts map[string]int     `json:"counts,omitempty"`
	// Failures counts the failed samples by err_kind ("other": none);
	// FirstError is the first one's err.
	Failures map[string]int `json:"failures,omitempty"`
	// Negotiated and Winners count the completed samples by the protocol
	// they spoke and by who won the dual path's race (the summary's).
	Negotiated map[string]int `json:"negotiated,omitempty"`
	Winners    map[string]int `json:"winners,omitempty"`
	// Conn counts the completed samples by what their connection did
	// (the summary's connection facts: tls, kept, resumed, zero_rtt,
	// again); format version 8.
	Conn       map[string]int `json:"conn,omitempty"`
	FirstError string         `json:"first_error,omitempty"`
	// Histogram is the completed samples' response times: pairs of a
	// bucket's lowest value (µs; HDR, 1 µs to 1 h, three significant
	// digits) and its count.
	Histogram [][2]int64 `json:"histogram_us,omitempty"`
	// WhatIf is the dual path's timer what-if over the run's samples (the
	// summary's sums, report/whatif.Saved).
	WhatIf json.RawMessage `json:"what_if,omitempty"`
}

// Wire counts the measured service's packets by what carried them.
type Wire struct {
	IPv4   uint64 `json:"ipv4"`
	IPv6   uint64 `json:"ipv6"`
	SixIn4 uint64 `json:"6in4"`
	NAT64  uint64 `json:"nat64,omitempty"`
	// DSLite counts IPv4 inside IPv6 (a DS-Lite softwire's packets).
	DSLite uint64 `json:"dslite,omitempty"`
	// Stray are the service's packets that belonged to no connection or
	// flow the run opened (late packets of an earlier run's): seen, not
	// counted above.
	Stray uint64 `json:"stray,omitempty"`
	// Dropped are frames the capture's ring had no room for in the run
	// (its reader fell behind): unseen, so neither counted nor proven.
	Dropped uint64 `json:"dropped,omitempty"`
	// ClientSide counts a run's packets on r1's link to the client, for
	// paths whose client has an IPv6-only access link (nat64, 464xlat,
	// dslite): IPv6 (or IPv4 in IPv6) only, as NAT64 or DSLite count the
	// form after r1.
	ClientSide *Wire `json:"client_side,omitempty"`
	// Datapath counts what the path's datapaths did during the run (the
	// IPv6-only access paths'): per datapath (clat, plat, b4, aftr)
	// packets translated each way (NAME_4to6, NAME_6to4) or tunnelled
	// (NAME_encap, NAME_decap) and dropped (NAME_dropped), and nat_no_port,
	// packets of new connections its NAT dropped for want of a free port.
	Datapath map[string]uint64 `json:"datapath,omitempty"`
}

// Carried is every packet the capture counted in a class: none means the
// measured link saw nothing of the run.
func (w *Wire) Carried() uint64 { return w.IPv4 + w.IPv6 + w.SixIn4 + w.NAT64 + w.DSLite }

// Background is what the background traffic did during one run: per flow,
// the rate its pattern offered, what the generator managed to send and
// what reached the sink, so an overloaded generator is visible.
type Background struct {
	Level string           `json:"level"`
	Flows []BackgroundFlow `json:"flows"`
}

// BackgroundFlow is one background flow's rates over a run, in Mbit/s.
type BackgroundFlow struct {
	ID            int     `json:"id"`
	Proto         string  `json:"proto"`
	Path          string  `json:"path"`
	From          string  `json:"from"`
	To            string  `json:"to"`
	OfferedMbps   float64 `json:"offered_mbps"`
	SentMbps      float64 `json:"sent_mbps"`
	DeliveredMbps float64 `json:"delivered_mbps"`
	Err           string  `json:"err,omitempty"`
}

// Header is the first line of samples.jsonl: everything needed to explain and
// re-render the results without the machine they came from.
type Header struct {
	Kind          string            `json:"kind"`
	FormatVersion int               `json:"format_version"`
	Tool          string            `json:"tool"`
	ToolVersion   string            `json:"tool_version"`
	Name          string            `json:"name"`
	Created       time.Time         `json:"created"`
	Command       []string          `json:"command,omitempty"`
	Host          string            `json:"host,omitempty"`
	Kernel        string            `json:"kernel,omitempty"`
	GoVersion     string            `json:"go_version,omitempty"`
	CPUs          int               `json:"cpus,omitempty"`
	Sysctls       map[string]string `json:"sysctls,omitempty"`
	// SysctlsSet lists what v6lab itself changed, with the old value.
	SysctlsSet map[string]string `json:"sysctls_set,omitempty"`
	Limits     map[string]string `json:"limits,omitempty"`
	// ClientSpin is how long the client's event loop polled without
	// blocking when one exchange was in flight ("0s": never; absent in
	// files from before it did).
	ClientSpin string `json:"client_spin,omitempty"`
	// Target says where it ran: lab, loopback or hosts ("remote" in
	// results of format version 3 and before, read as hosts).
	Target Where `json:"target"`
	// Lab describes the lab a "lab" run used: topology, tunnel
	// implementation and MTU, shaping, the link the wire was checked on.
	Lab     map[string]string `json:"lab,omitempty"`
	Servers map[string]string `json:"servers,omitempty"`
	// ServerRoles names, per key of Servers that stands for embedded
	// servers of other keys than its own name (a real server: nginx's
	// "http (real)" with TLS for http and https, the DNS64 Unbound's
	// "dns64 (real)" for dns, whose embedded server answers the nat64
	// path's lookups itself), those keys: compare pairs an embedded
	// result's servers with a real one's by them.
	ServerRoles map[string][]string `json:"server_roles,omitempty"`
	Baseline    string              `json:"baseline"`
	// Spec is the experiment as run, verbatim.
	Spec any `json:"spec,omitempty"`
	// Notes are facts the reader should know (fallbacks, caveats).
	Notes []string `json:"notes,omitempty"`
	// Segment is set when this process ran one share of the experiment's
	// users (v6lab run --segment); Merged lists the segments a merged
	// result was made of (v6lab merge).
	Segment *Segment  `json:"segment,omitempty"`
	Merged  []Segment `json:"merged,omitempty"`
	// SampleEvery, above 1, says the writer kept one sample row of every
	// SampleEvery of each run; each run's record then holds the totals of
	// all of them (Run.Totals), from which every figure is computed.
	SampleEvery int `json:"sample_every,omitempty"`
}

// LateAfter is how far past its slot a run may start before it counts as
// late: the timer's slack and the run's own set-up.
const LateAfter = 5 * time.Millisecond

// CellKey names a cell: protocol, path and connection count.
func CellKey(protocol, path string, conns int) string {
	return protocol + "/" + path + "/" + strconv.Itoa(conns)
}

// Site is a survey's record of one site (v6lab survey, target sites),
// written after the site's samples (its page transactions, whose Cell is
// the site's name and User its Index): what the samples do not hold. Its
// place in the list, its lookups, what each family's discovery found (the
// page's URL after redirects, the HTTP versions offered), the objects it
// embeds from other hosts and how each fared per family, and why it was
// not measured, if so. The reports judge the site from it and its
// samples; a survey's file holds a site's lines together, sites in list
// order (a resume continues after the last site record).
type Site struct {
	Kind string `json:"kind"`
	// Index is the site's place among the list's sites (0-based): what
	// segments split by and merge orders by. Line is its line in the
	// list file.
	Index int       `json:"index"`
	Line  int       `json:"line"`
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Skip says why nothing was sent to the site: its line is not a
	// host name, or the exclusion list names it.
	Skip string `json:"skip,omitempty"`
	// Lookups are the site's A, AAAA (and HTTPS) lookups, each timed.
	Lookups []Lookup `json:"lookups,omitempty"`
	// Families are what discovery found over each family.
	Families []SiteFamily `json:"families,omitempty"`
	// URL is the page measured (where redirects ended) and Version the
	// HTTP version asked for (1.1, 2 or 3).
	URL     string `json:"url,omitempty"`
	Version string `json:"version,omitempty"`
	// Objects are the page's objects on other hosts, each fetched over
	// every family the site was measured over.
	Objects []SiteObject `json:"objects,omitempty"`
	// Err says why the site could not be measured at all.
	Err string `json:"err,omitempty"`
}

// Lookup is one of a site's lookups.
type Lookup struct {
	// Type is the record type asked: A, AAAA or HTTPS.
	Type  string   `json:"type"`
	Addrs []string `json:"addrs,omitempty"`
	// Data is an HTTPS record's text (its ALPN, hints).
	Data string `json:"data,omitempty"`
	NS   int64  `json:"ns"`
	// Err is why no answer came, or NODATA/NXDOMAIN as the server said.
	Err string `json:"err,omitempty"`
	// Failed: the lookup got no answer that says what the DNS holds
	// (refused, timed out, SERVFAIL, ...): Err is a failure of the
	// lookup, not "no record".
	Failed bool `json:"failed,omitempty"`
}

// SiteFamily is what one family's discovery of a site found: the page's
// URL after its redirects, what the site offers, or why it failed.
type SiteFamily struct {
	Path string `json:"path"`
	URL  string `json:"url,omitempty"`
	// Redirects counts the redirects followed.
	Redirects int `json:"redirects,omitempty"`
	// Offers are the HTTP versions offered beyond 1.1: h2 (ALPN), h3
	// (Alt-Svc or an HTTPS record).
	Offers []string `json:"offers,omitempty"`
	// Connected says a connection over the family was made.
	Connected bool    `json:"connected,omitempty"`
	Err       string  `json:"err,omitempty"`
	ErrKind   ErrKind `json:"err_kind,omitempty"`
}

// SiteObject is one object on another host, and per path it was fetched
// over, why it failed ("" when it was fetched whole).
type SiteObject struct {
	URL string            `json:"url"`
	Err map[string]string `json:"err"`
}

// ResolveNotePrefix begins a run's note that its names were given, not
// looked up (--resolve): the report reads it to say where the wire time
// starts (at the SYN, not the DNS query).
const ResolveNotePrefix = "resolve: "
