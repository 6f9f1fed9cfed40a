package http

import (
	"net/url"
	"strings"
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/eyeballs"
)

// The dual path's dialers: v6lab's RFC 8305 ("" or v6lab, also named
// v2), Happy Eyeballs version 3 (v3), Go's net.Dialer (go).
const (
	DialerV2 = "v2"
	DialerV3 = "v3"
)

// Dialers are the values of the dialer option.
var Dialers = []string{"", "v6lab", DialerV2, DialerV3, "go"}

// V3Timers are dialer v3's settings (draft-ietf-happy-happyeyeballs-v3
// §9); zero takes the draft's value. attempt_delay (the Connection Attempt
// Delay without RTT data) is the cell's, as for v2.
type V3Timers struct {
	ResolutionDelay      proto.Duration `json:"resolution_delay,omitempty" opt:"resolution_delay" usage:"dialer v3: the Resolution Delay (§4.2): how long after the first address the race waits for AAAA and the HTTPS record before it starts (default 50ms)"`
	MinAttemptDelay      proto.Duration `json:"min_attempt_delay,omitempty" opt:"min_attempt_delay" usage:"dialer v3: the Minimum Connection Attempt Delay (§6; default 100ms, at least 10ms)"`
	MaxAttemptDelay      proto.Duration `json:"max_attempt_delay,omitempty" opt:"max_attempt_delay" usage:"dialer v3: the Maximum Connection Attempt Delay (§6; default 2s)"`
	PreferredFamilyCount int            `json:"preferred_family_count,omitempty" opt:"preferred_family_count" usage:"dialer v3: endpoints of IPv6 tried before IPv4's first (§5.3; default 1)"`
	FixedAttemptDelay    bool           `json:"fixed_attempt_delay,omitempty" opt:"fixed_attempt_delay" usage:"dialer v3: wait attempt_delay between attempts always, not the first retransmission time the address's measured RTT gives (§6)"`
}

// onlyV3 refuses dialer v3's own options given to another dialer,
// naming the first.
func (t V3Timers) onlyV3() error {
	for _, g := range []struct {
		option string
		set    bool
	}{{"resolution_delay", t.ResolutionDelay != 0}, {"min_attempt_delay", t.MinAttemptDelay != 0}, {"max_attempt_delay", t.MaxAttemptDelay != 0},
		{"preferred_family_count", t.PreferredFamilyCount != 0}, {"fixed_attempt_delay", t.FixedAttemptDelay}} {
		if g.set {
			return proto.Errorf(g.option, "is dialer v3's (Happy Eyeballs version 3): give dialer: v3")
		}
	}
	return nil
}

// v3 is the cell's version 3 client (nil unless dialer v3), its RTT
// history shared by the cell's users.
func (o *Options) v3() *eyeballs.V3 {
	if o.Dialer != DialerV3 {
		return nil
	}
	return &eyeballs.V3{ResolutionDelay: time.Duration(o.ResolutionDelay), AttemptDelay: time.Duration(o.Delay),
		MinAttemptDelay: time.Duration(o.MinAttemptDelay), MaxAttemptDelay: time.Duration(o.MaxAttemptDelay),
		PreferredFamilyCount: o.PreferredFamilyCount, Fixed: o.FixedAttemptDelay, History: &eyeballs.History{},
		Supported: v3Speaks(o.HTTPVersion)}
}

// v3Speaks is what a version 3 race offers for http_version v: the one
// version a cell names (2: h2 over TCP alone, 3: h3 over QUIC alone, 1.1:
// HTTP/1.1), so that its figures are of the version its label says;
// without one, all three, the winner's spoken (the eyeballs study's: what a
// browser gets).
func v3Speaks(v string) []string {
	switch v {
	case Version11:
		return []string{eyeballs.ALPNHTTP11}
	case Version2:
		return []string{eyeballs.ALPNH2}
	case Version3:
		return []string{eyeballs.ALPNH3}
	}
	return nil // eyeballs' default: h3, h2, http/1.1
}

// checkV3 checks dialer v3's settings: its timers (none negative, each
// within the draft's bounds), the other dialers not given them, and what
// v3 needs: TLS (QUIC has no plain form), an engine that is not the event
// loop (and v6lab's own client: Check says it first).
func (o *Options) checkV3(where result.Where, u *url.URL) error {
	for _, d := range []struct {
		option string
		v      proto.Duration
	}{{"resolution_delay", o.ResolutionDelay}, {"min_attempt_delay", o.MinAttemptDelay}, {"max_attempt_delay", o.MaxAttemptDelay}} {
		if d.v < 0 {
			return proto.Errorf(d.option, "%v: a delay is not negative", time.Duration(d.v))
		}
	}
	if o.PreferredFamilyCount < 0 {
		return proto.Errorf("preferred_family_count", "%d: want 1 or more (draft-ietf-happy-happyeyeballs-v3 §5.3)", o.PreferredFamilyCount)
	}
	if o.Dialer != DialerV3 {
		return o.V3Timers.onlyV3()
	}
	if err := o.v3().Check(); err != nil {
		// eyeballs names the option first: "min_attempt_delay 5ms: ..."
		option, rest, _ := strings.Cut(err.Error(), " ")
		return proto.Errorf(option, "%s", rest)
	}
	https := o.TLS || (u != nil && u.Scheme == "https") || (u == nil && where == result.Hosts)
	switch {
	case !o.RacesFamilies:
		return proto.Errorf("dialer", "v3 races the dual path's families, and the cell's paths have no dual")
	case !https:
		return proto.Errorf("dialer", "v3 races QUIC and TCP with TLS (HTTP/3, h2): give tls: true (the lab's https server) or an https:// url")
	case engine(o.Engine) == EngineEvloop:
		return proto.Errorf("engine", "evloop races with dialer v2: dialer v3 runs on Go's net and quic-go (engine auto or go)")
	}
	return nil
}
