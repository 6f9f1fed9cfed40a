package proto

import (
	"strconv"
	"strings"
	"time"
)

// A name the embedded DNS server answers may start with labels that ask
// it for an impairment of that name's answers, so that one lab run can
// measure a dual-stack client against late or missing answers beside
// prompt ones: aaaa-delay-300ms.www.v6lab.test is www.v6lab.test with its
// AAAA answered 300 ms late (AAAADelayLabel), a-delay-D its A,
// https-delay-D its HTTPS record; https-none answers its HTTPS query
// empty, https-nohints gives its HTTPS record without address hints. The
// labels stack, in any order.
const (
	ADelayLabel      = "a-delay-"
	HTTPSDelayLabel  = "https-delay-"
	HTTPSNoneLabel   = "https-none"
	HTTPSNoHintLabel = "https-nohints"
)

// NameAsk is what a name's leading labels ask of the embedded DNS server.
type NameAsk struct {
	// Delays of the A, AAAA and HTTPS answers (each at most MaxAAAADelay).
	A, AAAA, HTTPS time.Duration
	// NoHTTPS: the HTTPS query is answered empty; NoHints: the HTTPS
	// record carries no ipv4hint or ipv6hint.
	NoHTTPS, NoHints bool
}

// Zero says whether the name asks for nothing.
func (a NameAsk) Zero() bool { return a == NameAsk{} }

// Delay is the delay of the answer of record type qtype (A, AAAA or
// HTTPS, as miekg/dns names them).
func (a NameAsk) Delay(qtype string) time.Duration {
	switch qtype {
	case "A":
		return a.A
	case "AAAA":
		return a.AAAA
	case "HTTPS", "SVCB":
		return a.HTTPS
	}
	return 0
}

// Labels are the leading labels that ask for a, each followed by a dot
// ("" for nothing), to put before a name.
func (a NameAsk) Labels() string {
	var b strings.Builder
	for _, l := range []struct {
		label string
		d     time.Duration
	}{{HTTPSDelayLabel, a.HTTPS}, {AAAADelayLabel, a.AAAA}, {ADelayLabel, a.A}} {
		if l.d > 0 {
			b.WriteString(l.label + l.d.String() + ".")
		}
	}
	if a.NoHTTPS {
		b.WriteString(HTTPSNoneLabel + ".")
	}
	if a.NoHints {
		b.WriteString(HTTPSNoHintLabel + ".")
	}
	return b.String()
}

// AskedName reads a name's leading labels: the name they stand before,
// and what they ask. Labels that ask nothing v6lab knows (or a delay not
// above 0 and at most MaxAAAADelay) end the reading: the rest is the name.
func AskedName(name string) (string, NameAsk) {
	var a NameAsk
	for {
		first, rest, ok := strings.Cut(name, ".")
		if !ok || rest == "" || !a.take(strings.ToLower(first)) {
			return name, a
		}
		name = rest
	}
}

// take applies one label to a, reporting whether it was one.
func (a *NameAsk) take(label string) bool {
	switch label {
	case HTTPSNoneLabel:
		a.NoHTTPS = true
		return true
	case HTTPSNoHintLabel:
		a.NoHints = true
		return true
	}
	for _, l := range []struct {
		prefix string
		to     *time.Duration
	}{{AAAADelayLabel, &a.AAAA}, {HTTPSDelayLabel, &a.HTTPS}, {ADelayLabel, &a.A}} {
		v, ok := strings.CutPrefix(label, l.prefix)
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxAAAADelay || *l.to != 0 {
			return false
		}
		*l.to = d
		return true
	}
	return false
}

// HTTPSName is the name an HTTPS query asks for an origin's host and
// port (RFC 9460 §9.1): the host itself for port 443, else
// _PORT._https.HOST.
func HTTPSName(host string, port int) string {
	if port == 443 || port == 0 {
		return host
	}
	return "_" + strconv.Itoa(port) + "._https." + host
}

// HTTPSOwner reads an HTTPS query's name back: the host and the port it
// asks about (443 without a port prefix).
func HTTPSOwner(name string) (host string, port int) {
	if rest, ok := strings.CutPrefix(name, "_"); ok {
		p, after, ok := strings.Cut(rest, ".")
		n, err := strconv.Atoi(p)
		if h, https := strings.CutPrefix(strings.ToLower(after), "_https."); ok && https && err == nil && n > 0 && n < 65536 {
			return after[len(after)-len(h):], n
		}
	}
	return name, 443
}

// Advertised is a Running server that says which application protocols
// (ALPN ids) it speaks over TLS on its port, so the embedded DNS server
// started after it gives them in an HTTPS record (RFC 9460).
type Advertised interface {
	ALPN() []string
}
