package report

import (
	"strings"
	"testing"
)

// TestDatapathNotesSumEachPathsRuns: the runs' datapath counts, summed per
// path, in the notes, in report order.
func TestDatapathNotesSumEachPathsRuns(t *testing.T) {
	byPath := map[string]map[string]uint64{
		"dslite":  {"b4_encap": 10, "b4_decap": 9, "b4_dropped": 0, "aftr_encap": 9, "aftr_decap": 10, "aftr_dropped": 1, "nat_no_port": 0},
		"464xlat": {"clat_4to6": 5, "clat_6to4": 4, "clat_dropped": 0, "plat_4to6": 4, "plat_6to4": 5, "plat_dropped": 0, "nat_no_port": 7},
	}
	got := datapathNotes(byPath, map[string]int{"dslite": 2, "464xlat": 3})
	want := []string{
		"datapaths of 464xlat over its 3 runs: CLAT 5 IPv4 to IPv6, 4 IPv6 to IPv4, 0 dropped; NAT64 (PLAT) 4 IPv4 to IPv6, 5 IPv6 to IPv4, 0 dropped; its NAT dropped 7 packets of new connections for want of a free port",
		"datapaths of dslite over its 2 runs: B4 10 encapsulated, 9 decapsulated, 0 dropped; AFTR 9 encapsulated, 10 decapsulated, 1 dropped; its NAT dropped 0 packets of new connections for want of a free port",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDatapathNotesSayWhatWasDropped (trial8 F8): the drops by kind that
// the runs recorded are said with what each kind is; a kind none of the
// runs had is not named.
func TestDatapathNotesSayWhatWasDropped(t *testing.T) {
	byPath := map[string]map[string]uint64{
		"nat64": {"plat_4to6": 2080, "plat_6to4": 1517, "plat_dropped": 4, "plat_dropped_unsupported": 3, "plat_dropped_hoplimit": 1},
	}
	got := datapathNotes(byPath, map[string]int{"nat64": 20})
	want := "datapaths of nat64 over its 20 runs: NAT64 (PLAT) 2080 IPv4 to IPv6, 1517 IPv6 to IPv4, 4 dropped (1 hoplimit: hop limit or TTL run out; " +
		"3 unsupported: what it does not translate by design: ICMP other than echo (errors such as the port unreachable a QUIC datagram gets once its socket is closed), IPv6 extension headers, IPv4 options, fragments of ICMP)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}
