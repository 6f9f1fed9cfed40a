package path

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// arrival is one query as a lossyDNS server got it.
type arrival struct {
	at   time.Time
	from netip.AddrPort
	id   uint16
}

// lossyDNS is a DNS server on IPv4's loopback that drops the first drop
// queries it gets (all of them when drop is negative) and answers the
// rest with fakeDNS's A record; every query's arrival is reported.
func lossyDNS(t *testing.T, drop int) (netip.AddrPort, <-chan arrival) {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	arrived := make(chan arrival, 64)
	go func() {
		b := make([]byte, 512)
		for n := 0; ; n++ {
			size, from, err := pc.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(b[:size]) != nil {
				continue
			}
			arrived <- arrival{time.Now(), from, q.Id}
			if drop < 0 || n < drop {
				continue
			}
			r := new(dns.Msg)
			r.SetReply(q)
			h := dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}
			r.Answer = append(r.Answer, &dns.A{Hdr: h, A: net.IPv4(192, 0, 2, 7)})
			out, _ := r.Pack()
			pc.WriteToUDPAddrPort(out, from)
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String()), arrived
}

// drain is every arrival reported so far.
func drain(c <-chan arrival) []arrival {
	var out []arrival
	for {
		select {
		case a := <-c:
			out = append(out, a)
		default:
			return out
		}
	}
}

// TestALostQueryIsSentAgain: a server that drops the first query answers
// the second, sent after the stub's timeout from the same socket with the
// same ID; the lookup succeeds, its hook counting one resend and holding
// the first query's transmit stamp (the lookup's time includes the wait).
func TestALostQueryIsSentAgain(t *testing.T) {
	server, arrived := lossyDNS(t, 1)
	r := &Resolver{Servers: []netip.AddrPort{server}, Stub: Stub{Timeout: 200 * time.Millisecond, Attempts: 2}}
	hook := &LookupHook{}
	start := time.Now()
	a, err := r.LookupFrom(context.Background(), "www.v6lab.test", IPv4, hook)
	took := time.Since(start)
	if err != nil || a != answer(IPv4) {
		t.Fatalf("lookup: %v %v", a, err)
	}
	got := drain(arrived)
	if len(got) != 2 || hook.Resent != 1 {
		t.Fatalf("server got %d queries, hook says %d resent; want 2 and 1", len(got), hook.Resent)
	}
	if gap := got[1].at.Sub(got[0].at); gap < 200*time.Millisecond || took < 200*time.Millisecond {
		t.Errorf("sent again %v after the first (lookup took %v); want the stub's 200ms", gap, took)
	}
	if got[0].from != got[1].from || got[0].id != got[1].id || got[0].from.String() != hook.Local {
		t.Errorf("queries from %v id %d and %v id %d (hook's local %s): want one socket, one ID", got[0].from, got[0].id, got[1].from, got[1].id, hook.Local)
	}
	if !hook.Sent.IsZero() && hook.Sent.After(got[0].at) {
		t.Errorf("transmit stamp %v is after the first query arrived %v: not the first query's", hook.Sent, got[0].at)
	}
}

// TestLookupResendsOnItsOwnScheduleByDefault: the zero Stub waits
// FirstRetry before sending again, and the lookup then succeeds.
func TestLookupResendsOnItsOwnScheduleByDefault(t *testing.T) {
	server, arrived := lossyDNS(t, 1)
	r := &Resolver{Servers: []netip.AddrPort{server}}
	hook := &LookupHook{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a, err := r.LookupFrom(ctx, "www.v6lab.test", IPv4, hook); err != nil || a != answer(IPv4) {
		t.Fatalf("lookup: %v %v", a, err)
	}
	got := drain(arrived)
	if len(got) != 2 || hook.Resent != 1 || got[1].at.Sub(got[0].at) < FirstRetry {
		t.Fatalf("%d queries, %d resent, %v apart; want 2, 1, at least %v", len(got), hook.Resent, got[len(got)-1].at.Sub(got[0].at), FirstRetry)
	}
}

// TestLookupGivesUpAfterItsAttempts: a server that answers nothing gets
// exactly the stub's attempts, and the failure says how many queries
// went unanswered and when; it is the lookup's failure, not the
// transaction's timeout.
func TestLookupGivesUpAfterItsAttempts(t *testing.T) {
	server, arrived := lossyDNS(t, -1)
	r := &Resolver{Servers: []netip.AddrPort{server}, Stub: Stub{Timeout: 30 * time.Millisecond, Attempts: 3}}
	hook := &LookupHook{}
	start := time.Now()
	_, err := r.LookupFrom(context.Background(), "www.v6lab.test", IPv4, hook)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "no answer to 3 queries (sent at 0s, ") ||
		!strings.Contains(err.Error(), "options timeout:30ms attempts:3") || !strings.HasPrefix(err.Error(), "path: resolve www.v6lab.test A via "+server.String()) {
		t.Fatalf("error %v", err)
	}
	t.Log(err)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("spent attempts read as a timeout: %v", err)
	}
	if took < 90*time.Millisecond || hook.Resent != 2 {
		t.Errorf("gave up after %v with %d resent; want 3 waits of 30ms, 2 resent", took, hook.Resent)
	}
	time.Sleep(50 * time.Millisecond) // nothing more comes
	if got := drain(arrived); len(got) != 3 {
		t.Errorf("server got %d queries, want 3", len(got))
	}
}

// TestLookupTimeoutSaysHowManyQueriesWent: without a limit on attempts, the
// context's end ends the lookup as a timeout, saying how many queries
// it sent.
func TestLookupTimeoutSaysHowManyQueriesWent(t *testing.T) {
	server, arrived := lossyDNS(t, -1)
	r := &Resolver{Servers: []netip.AddrPort{server}, Stub: Stub{Timeout: 40 * time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	hook := &LookupHook{}
	_, err := r.LookupFrom(ctx, "www.v6lab.test", IPv4, hook)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout, got %v", err)
	}
	t.Log(err)
	got := drain(arrived)
	if len(got) < 2 || hook.Resent != len(got)-1 {
		t.Fatalf("server got %d queries, hook says %d resent", len(got), hook.Resent)
	}
	if want := "no answer to " + itoa(len(got)) + " queries (sent at 0s, "; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}

	// Ended before the first wait is over: one query, said so.
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := r.LookupFrom(short, "www.v6lab.test", IPv4, nil); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer to its one query: ") {
		t.Errorf("one query: %v", err)
	}
}

func TestReadResolvConfOptions(t *testing.T) {
	for in, want := range map[string]Stub{
		"search v6lab.test\n":                               {},
		"options rotate ndots:2 edns0\n":                    {},
		"options timeout:1 attempts:3\n":                    {Timeout: time.Second, Attempts: 3},
		"options attempts:4\n":                              {Timeout: 5 * time.Second, Attempts: 4},
		"options timeout:2\n":                               {Timeout: 2 * time.Second, Attempts: 2},
		"options timeout:60 attempts:9\n":                   {Timeout: 30 * time.Second, Attempts: 5},
		"options timeout:0 attempts:0\n":                    {Timeout: time.Second, Attempts: 1},
		"options timeout:3\noptions timeout:4 attempts:1\n": {Timeout: 4 * time.Second, Attempts: 1},
		"options timeout:x attempts:-1 timeout\n":           {},
	} {
		rc, err := ReadResolvConf(strings.NewReader("nameserver 192.0.2.53\n" + in))
		if err != nil || rc.Stub != want || len(rc.Servers) != 1 {
			t.Errorf("%q: %+v %v, want %+v", in, rc, err, want)
		}
	}
	if s := (Stub{}).String(); !strings.Contains(s, "after 1s, the wait doubled") {
		t.Errorf("the default's words: %q", s)
	}
}

// TestResOptionsOverTheFile: RES_OPTIONS's words are read over the
// file's options, as glibc reads them.
func TestResOptionsOverTheFile(t *testing.T) {
	rc, _ := ReadResolvConf(strings.NewReader("nameserver 192.0.2.53\noptions timeout:1 attempts:4\n"))
	if got := WithOptions(rc.Stub, "attempts:2 rotate"); got != (Stub{Timeout: time.Second, Attempts: 2}) {
		t.Errorf("RES_OPTIONS attempts:2 over timeout:1 attempts:4: %+v", got)
	}
	if got := WithOptions(Stub{}, ""); got != (Stub{}) {
		t.Errorf("no options anywhere: %+v, want v6lab's own (the zero Stub)", got)
	}
}
