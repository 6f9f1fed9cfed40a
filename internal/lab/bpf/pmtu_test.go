package bpf

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// rawFrame is an Ethernet frame of type ethType around hdr and a payload
// of n bytes, by hand: the impairment reads only headers, so lengths and
// checksums need not be right.
func rawFrame(ethType uint16, hdr []byte, n int) []byte {
	f := make([]byte, 14, 14+len(hdr)+n)
	binary.BigEndian.PutUint16(f[12:], ethType)
	f = append(f, hdr...)
	return append(f, make([]byte, n)...)
}

// ipv6Hdr is an IPv6 header with next header nh, then the first bytes of
// what follows.
func ipv6Hdr(nh byte, next ...byte) []byte {
	h := make([]byte, 40)
	h[0], h[6], h[7] = 0x60, nh, 64
	return append(h, next...)
}

// ipv4Hdr is an IPv4 header of ihl words (options zero) with protocol
// proto and flags/offset frag, then the first bytes of what follows.
func ipv4Hdr(ihl int, proto byte, frag uint16, next ...byte) []byte {
	h := make([]byte, ihl*4)
	h[0], h[8], h[9] = 0x40|byte(ihl), 64, proto
	binary.BigEndian.PutUint16(h[6:], frag)
	return append(h, next...)
}

// pmtuFrames are one frame of every kind the impairment tells apart,
// with the counter it belongs to (-1: none, passed uncounted).
var pmtuFrames = []struct {
	name   string
	frame  []byte
	passed int // the counter when let pass; dropped is passed-1
}{
	{"ICMPv6 Packet Too Big", rawFrame(0x86dd, ipv6Hdr(58, 2, 0, 0, 0, 0, 0, 0x05, 0x78), 1232), PTB6Passed},
	{"ICMPv6 echo request", rawFrame(0x86dd, ipv6Hdr(58, 128, 0), 56), -1},
	{"ICMPv6 destination unreachable", rawFrame(0x86dd, ipv6Hdr(58, 1, 4), 100), -1},
	{"IPv6 TCP", rawFrame(0x86dd, ipv6Hdr(6), 1440), -1},
	{"IPv6 first fragment", rawFrame(0x86dd, ipv6Hdr(44, 17, 0, 0, 1, 0, 0, 0, 7), 1400), Frag6Passed},
	{"IPv6 later fragment", rawFrame(0x86dd, ipv6Hdr(44, 17, 0, 0x05, 0x78, 0, 0, 0, 7), 100), Frag6Passed},
	{"ICMPv4 fragmentation needed", rawFrame(0x0800, ipv4Hdr(5, 1, 0, 3, 4), 548), PTB4Passed},
	{"ICMPv4 fragmentation needed after options", rawFrame(0x0800, ipv4Hdr(6, 1, 0, 3, 4), 548), PTB4Passed},
	{"ICMPv4 port unreachable", rawFrame(0x0800, ipv4Hdr(5, 1, 0, 3, 3), 548), -1},
	{"ICMPv4 echo with DF", rawFrame(0x0800, ipv4Hdr(5, 1, 0x4000, 8, 0), 56), -1},
	{"IPv4 TCP with DF", rawFrame(0x0800, ipv4Hdr(5, 6, 0x4000), 1460), -1},
	{"IPv4 first fragment", rawFrame(0x0800, ipv4Hdr(5, 17, 0x2000), 1480), Frag4Passed},
	{"IPv4 last fragment", rawFrame(0x0800, ipv4Hdr(5, 17, 0x00b9), 60), Frag4Passed},
	{"IPv4 fragment of ICMP fragmentation needed", rawFrame(0x0800, ipv4Hdr(5, 1, 0x2000, 3, 4), 1480), Frag4Passed},
	{"ARP", rawFrame(0x0806, make([]byte, 28), 0), -1},
}

// TestPMTUClassifies runs every kind of frame through the impairment
// with each thing to drop: the kinds dropped are dropped and counted as
// such, the others passed on to the next program (counted if they are of
// a kind it knows), and nothing else is touched.
func TestPMTUClassifies(t *testing.T) {
	requireBPF(t)
	for _, d := range []PMTUDrop{{}, {PTB6: true}, {PTB4: true}, {PTB6: true, PTB4: true}, {Frag6: true}, {Frag4: true}, {PTB6: true, Frag6: true, Frag4: true}} {
		t.Run(fmt.Sprintf("%+v", d), func(t *testing.T) {
			p, err := NewPMTU(d)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			drops := map[int]bool{PTB6Passed: d.PTB6, PTB4Passed: d.PTB4, Frag6Passed: d.Frag6, Frag4Passed: d.Frag4}
			want := make([]uint64, NumPMTUCounters)
			for _, f := range pmtuFrames {
				rc, _ := run(t, p.prog, f.frame)
				wantRC := int32(retNext)
				if f.passed >= 0 && drops[f.passed] {
					wantRC = retDrop
					want[f.passed-1]++
				} else if f.passed >= 0 {
					want[f.passed]++
				}
				if rc != wantRC {
					t.Errorf("%s: returned %d, want %d", f.name, rc, wantRC)
				}
			}
			got, err := p.Counters()
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("counters %v, want %v (%s)", got, want, PMTUCounts(got))
					break
				}
			}
		})
	}
}
