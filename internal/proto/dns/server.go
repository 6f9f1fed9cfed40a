// Package dns measures DNS query response time and serves the names the
// other probes look up: an authoritative server answering A and AAAA over
// UDP and TCP on both families.
package dns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	mdns "github.com/miekg/dns"

	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// Zone maps names to their addresses; a name gets an A record for each IPv4
// address and an AAAA record for each IPv6 one.
type Zone map[string][]netip.Addr

// ParseRecord reads "NAME=ADDR" into z, e.g. "www.v6lab.test=::1"; NAME
// is held to CheckName.
func (z Zone) ParseRecord(s string) error {
	name, addr, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("dns: bad record %q (want NAME=ADDR)", s)
	}
	if err := CheckName(strings.TrimSpace(name)); err != nil {
		return fmt.Errorf("dns: bad record %q: %w", s, err)
	}
	a, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil {
		return fmt.Errorf("dns: bad record %q: %q is not an IP address", s, addr)
	}
	if a.Zone() != "" {
		return fmt.Errorf("dns: bad record %q: %s names a zone (%%%s), which an AAAA record cannot carry: give the address without it", s, strings.TrimSpace(addr), a.Zone())
	}
	switch {
	case a.Is4In6():
		return fmt.Errorf("dns: bad record %q: %s is an IPv4-mapped IPv6 address: served as an AAAA record it would send an IPv6 socket over IPv4, which measures no IPv6 path; give %s for an A record", s, strings.TrimSpace(addr), a.Unmap())
	case a.IsUnspecified():
		return fmt.Errorf("dns: bad record %q: %s is the unspecified address, which no server answers on: give the server's address", s, strings.TrimSpace(addr))
	}
	z.Add(name, a)
	return nil
}

// Bounds of a DNS name (RFC 1035 §2.3.4), as text without its final dot.
const (
	MaxLabel = 63
	MaxName  = 253
)

// CheckName is the rule for a name to ask or serve: labels of 1 to 63
// characters, at most 253 in all (a final dot aside), each of letters,
// digits, hyphens and underscores (_dns._udp), the characters of a host
// name: no blank, control character, ';' or '$', which DNS would carry
// but a name given by mistake (a shell's, a URL's) holds.
func CheckName(name string) error {
	if i := strings.IndexFunc(name, func(r rune) bool { return !nameChar(r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("%q is not a DNS name: it holds %q at byte %d (letters, digits, '-', '_' and dots only; an internationalised name in its xn-- form)", name, r, i)
	}
	n := strings.TrimSuffix(name, ".")
	switch {
	case n == "":
		return fmt.Errorf("%q is not a DNS name: it is empty", name)
	case len(n) > MaxName:
		return fmt.Errorf("%.40q… is not a DNS name: %d characters (at most %d)", name, len(n), MaxName)
	}
	for _, l := range strings.Split(n, ".") {
		if l == "" {
			return fmt.Errorf("%q is not a DNS name: an empty label (two dots, or a leading one)", name)
		}
		if len(l) > MaxLabel {
			return fmt.Errorf("%.40q… is not a DNS name: a label of %d characters (at most %d)", name, len(l), MaxLabel)
		}
	}
	return nil
}

// nameChar says whether r may be in a DNS name CheckName accepts.
func nameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// Add gives name one more address.
func (z Zone) Add(name string, a netip.Addr) {
	k := mdns.CanonicalName(strings.TrimSpace(name))
	z[k] = append(z[k], a.Unmap())
}

// Synthesize is the zone as a DNS64 server answers it (RFC 6147 §5.1.7):
// every name with A records but no AAAA gets an AAAA for each A, its
// IPv4 address embedded under prefix (a /96, RFC 6052 §2.2); names with
// AAAA keep theirs. An invalid prefix synthesises nothing.
func (z Zone) Synthesize(prefix netip.Prefix) Zone {
	out := Zone{}
	for name, addrs := range z {
		out[name] = append([]netip.Addr(nil), addrs...)
		if !prefix.IsValid() || prefix.Bits() != 96 || slices.ContainsFunc(addrs, netip.Addr.Is6) {
			continue
		}
		for _, a := range addrs {
			out[name] = append(out[name], path.Embed(prefix, a))
		}
	}
	return out
}

// Names lists the zone's names, sorted.
func (z Zone) Names() []string {
	var out []string
	for k := range z {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TTL of every answer.
const TTL = 60

// Views gives the zone to answer from by the server address a query
// arrived on: in the lab, a query sent to the server's 6in4 address gets the
// 6in4 address as its AAAA, so that path has its own view of the same name.
type Views map[netip.Addr]Zone

// Handler answers from the zone: A/AAAA records, NODATA for a known name
// without that type (a name given only an HTTPS or SVCB record is known),
// NXDOMAIN for unknown names, NOTIMP for other opcodes.
func (z Zone) Handler() mdns.Handler { return z.handler(nil, nil) }

func (z Zone) handler(views Views, svc *Services) mdns.Handler {
	late := make(chan struct{}, MaxLateAnswers)
	return mdns.HandlerFunc(func(w mdns.ResponseWriter, req *mdns.Msg) {
		z := z
		if v, ok := views[path.AddrOf(w.LocalAddr()).Unmap()]; ok {
			z = v
		}
		m := new(mdns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		m.RecursionAvailable = false
		if req.Opcode != mdns.OpcodeQuery || len(req.Question) != 1 {
			m.SetRcode(req, mdns.RcodeNotImplemented)
			w.WriteMsg(m)
			return
		}
		q := req.Question[0]
		name, _, ask := asked(q)
		if delay := ask.Delay(mdns.TypeToString[q.Qtype]); delay > 0 {
			// An impairment a dual-stack client meets: an answer late
			// (proto.AskedName). A flood of such queries gets SERVFAIL,
			// not a sleeper each.
			select {
			case late <- struct{}{}:
				time.Sleep(delay)
				<-late
			default:
				m.SetRcode(req, mdns.RcodeServerFailure)
				w.WriteMsg(m)
				return
			}
		}
		if q.Qtype == mdns.TypeHTTPS || q.Qtype == mdns.TypeSVCB {
			svc.answer(m, q, z) // svcb.go
			w.WriteMsg(m)
			return
		}
		addrs, ok := z[mdns.CanonicalName(name)]
		if !ok && !svc.named(name) { // a name with only an HTTPS or SVCB record exists: NODATA (RFC 8020)
			m.SetRcode(req, mdns.RcodeNameError)
			fit(w, req, m)
			w.WriteMsg(m)
			return
		}
		hdr := mdns.RR_Header{Name: q.Name, Class: mdns.ClassINET, Ttl: TTL}
		if q.Qtype == mdns.TypeTXT && mdns.CanonicalName(name) == mdns.CanonicalName(proto.LargeName) {
			h := hdr
			h.Rrtype = mdns.TypeTXT
			for _, t := range proto.LargeTXT() {
				m.Answer = append(m.Answer, &mdns.TXT{Hdr: h, Txt: []string{t}})
			}
			m.Compress = true // as Unbound answers it: proto.LargeAnswer bytes
		}
		for _, a := range addrs {
			switch {
			case q.Qtype == mdns.TypeA && a.Is4():
				h := hdr
				h.Rrtype = mdns.TypeA
				m.Answer = append(m.Answer, &mdns.A{Hdr: h, A: net.IP(a.AsSlice())})
			case q.Qtype == mdns.TypeAAAA && a.Is6():
				h := hdr
				h.Rrtype = mdns.TypeAAAA
				m.Answer = append(m.Answer, &mdns.AAAA{Hdr: h, AAAA: net.IP(a.AsSlice())})
			}
		}
		fit(w, req, m)
		w.WriteMsg(m)
	})
}

// ServerEDNS is the UDP payload size the embedded server advertises in its
// replies to queries with EDNS.
const ServerEDNS = 4096

// fit sizes a reply as RFC 6891 says: with an OPT record when the query
// had one, and over UDP no longer than the payload size the query
// advertised (512 bytes without EDNS), truncated (TC set, records left
// out) where it would be: the client then asks again over TCP.
func fit(w mdns.ResponseWriter, req, m *mdns.Msg) {
	size := mdns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(ServerEDNS, false)
		size = max(int(opt.UDPSize()), mdns.MinMsgSize)
	}
	if _, tcp := w.LocalAddr().(*net.TCPAddr); tcp {
		return
	}
	if m.Len() > size {
		m.Truncate(size)
	}
}

// MaxLateAnswers bounds the late AAAA answers (aaaa-delay names) a server
// holds at once.
const MaxLateAnswers = 1024

// Server is a running embedded DNS server.
type Server struct {
	// Port is shared by UDP and TCP on every address.
	Port    int
	servers []*mdns.Server
	udp     []*udpResponder
	pcs     []net.PacketConn
	addrs   []netip.AddrPort
	wg      sync.WaitGroup
}

// Listen serves zone on every address over UDP and TCP, one port for all
// (0 picks one). Sockets are pinned to each address's family.
func Listen(ctx context.Context, zone Zone, addrs []netip.Addr, port int) (*Server, error) {
	return ListenViews(ctx, zone, nil, addrs, port)
}

// ListenViews is Listen where queries arriving on an address of views are
// answered from that view's zone.
func ListenViews(ctx context.Context, zone Zone, views Views, addrs []netip.Addr, port int) (*Server, error) {
	return ListenServices(ctx, zone, views, nil, addrs, port)
}

// ListenServices is ListenViews that also gives svc's HTTPS and SVCB
// records (svcb.go).
func ListenServices(ctx context.Context, zone Zone, views Views, svc *Services, addrs []netip.Addr, port int) (*Server, error) {
	s := &Server{}
	h := zone.handler(views, svc)
	socks, got, err := path.ListenBothSamePort(ctx, addrs, port)
	if err != nil {
		return nil, fmt.Errorf("dns: listen: %w", err)
	}
	s.Port = got
	for i, pr := range socks {
		growReceiveBuffer(pr.UDP.(*net.UDPConn), ReceiveBuffer)
		s.addrs = append(s.addrs, netip.AddrPortFrom(addrs[i], uint16(got)))
		u, err := newUDPResponder(pr.UDP.(*net.UDPConn), h)
		if err != nil {
			s.Close()
			for _, rest := range socks[i:] { // not yet the server's to close
				rest.TCP.Close()
				rest.UDP.Close()
			}
			return nil, fmt.Errorf("dns: listen: %w", err)
		}
		s.udp, s.pcs = append(s.udp, u), append(s.pcs, pr.UDP)
		go u.serve()
		for _, srv := range []*mdns.Server{{Listener: pr.TCP, Handler: h}} {
			s.servers = append(s.servers, srv)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				srv.ActivateAndServe()
			}()
		}
	}
	return s, nil
}

// ReceiveBuffer is the UDP receive buffer the server asks for: thousands of
// users released at once send their queries in the same millisecond, and
// the default buffer (about 200 KiB) drops most of them.
const ReceiveBuffer = 16 << 20

// growReceiveBuffer sets SO_RCVBUFFORCE (root may exceed rmem_max), or
// failing that SO_RCVBUF, which the kernel caps at net.core.rmem_max.
func growReceiveBuffer(c *net.UDPConn, size int) {
	raw, err := c.SyscallConn()
	if err == nil {
		var serr error
		raw.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, size)
		})
		if serr == nil {
			return
		}
	}
	_ = c.SetReadBuffer(size)
}

// Addrs are the server's addresses with its port.
func (s *Server) Addrs() []netip.AddrPort { return s.addrs }

// Close stops every listener and waits for them.
func (s *Server) Close() error {
	for _, srv := range s.servers {
		if err := srv.Shutdown(); err != nil {
			// Not started yet: close the sockets directly.
			if srv.PacketConn != nil {
				srv.PacketConn.Close()
			}
			if srv.Listener != nil {
				srv.Listener.Close()
			}
		}
	}
	for _, u := range s.udp {
		u.Close()
	}
	for _, pc := range s.pcs {
		pc.Close()
	}
	s.wg.Wait()
	return nil
}
