package inlab

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/lab"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

// keeper is a probe that keeps what its transactions opened until closed,
// as a keepalive cell's probe keeps its users' connections.
type keeper struct {
	fails  int // transactions that fail before one completes
	did    int
	closed int
}

func (k *keeper) Do(context.Context, int) result.Sample {
	if k.closed > 0 {
		return result.Sample{Err: "used after close"}
	}
	k.did++
	if k.did <= k.fails {
		return result.Sample{Err: "refused"}
	}
	return result.Sample{}
}

func (k *keeper) Close() error { k.closed++; return nil }

// TestSettlingClosesWhatItKept: settling's probe is closed once its path
// settled, or gave up, so the connections it kept (HTTP/3 keepalive's)
// send nothing into the first runs (trial9's settling strays).
func TestSettlingClosesWhatItKept(t *testing.T) {
	k := &keeper{fails: 2}
	ok, last := settlePath(context.Background(), k, 5, time.Second)
	if !ok || last != "" || k.did != 3 || k.closed != 1 {
		t.Errorf("settled: ok %v last %q, %d transactions, closed %d times; want ok after 3, closed once", ok, last, k.did, k.closed)
	}
	k = &keeper{fails: 9}
	ok, last = settlePath(context.Background(), k, 2, time.Second)
	if ok || last != "refused" || k.did != 2 || k.closed != 1 {
		t.Errorf("failed: ok %v last %q, %d transactions, closed %d times; want not ok after 2, closed once", ok, last, k.did, k.closed)
	}
}

// TestLabLossInWords: the loss a lab's config puts on its links, as the
// job's lab header keeps the config.
func TestLabLossInWords(t *testing.T) {
	wide := lab.Config{Name: "x"}
	loss := 30.0
	if err := wide.Override(lab.Overrides{Loss: &loss}); err != nil {
		t.Fatal(err)
	}
	one, err := lab.ParseTopology("t.yaml", []byte("links:\n  r1-r2:\n    loss: 5%\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  lab.Config
		want string
	}{{wide, "loss 30% on every link"}, {one, "loss 5% on r1-r2"}, {lab.Config{Name: "x"}, ""}} {
		b, _ := json.Marshal(tc.cfg)
		if got := LabLoss(string(b)); got != tc.want {
			t.Errorf("%s: %q, want %q", b, got, tc.want)
		}
	}
}

// TestSettlingUnderTheLabsLoss: in a lab the user gave a loss, a path
// that settling cannot get a transaction through is left to its runs
// with a note that says the loss, and the next path is still settled
// (trial10 T2: --loss 30 ended the run, "does not work in the lab", with
// nothing kept); in a lab without one it ends the run at that path, and
// both say when settling's floor was over the cell's --timeout.
func TestSettlingUnderTheLabsLoss(t *testing.T) {
	exp, err := experiment.Parse("s.yaml", []byte("name: s\nwhere: lab\npaths: [ipv4, ipv6]\ntimeout: 3s\ncells:\n  - {protocol: http, conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, loss := range []float64{30, 0} {
		cfg := lab.Config{Name: "x"}
		if err := cfg.Override(lab.Overrides{Loss: &loss}); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(cfg)
		j := &Job{Exp: exp, Lab: map[string]string{"config": string(b)}}
		probes := map[path.Path]*keeper{path.IPv4: {fails: 99}, path.IPv6: {}}
		probe := func(_ *experiment.CellGroup, p path.Path) (load.Probe, error) { return probes[p], nil }
		err := j.settle(context.Background(), probe)
		floor := "(settling gives a try at least 5s, over the cell's timeout 3s)"
		if loss > 0 {
			want := "settling: http over path ipv4 completed no transaction in 3 tries at the lab's loss 30% on every link: refused " + floor + "; left to its runs, which record their failures"
			if err != nil || len(j.Notes) != 1 || j.Notes[0] != want {
				t.Errorf("loss 30: %v, notes %q; want no error and the note %q", err, j.Notes, want)
			}
			if probes[path.IPv4].did != 3 || probes[path.IPv6].did != 1 {
				t.Errorf("loss 30: ipv4 tried %d times, ipv6 %d; want 3 and 1", probes[path.IPv4].did, probes[path.IPv6].did)
			}
			continue
		}
		want := "http over path ipv4 does not work in the lab: refused " + floor
		if err == nil || err.Error() != want || len(j.Notes) != 0 || probes[path.IPv4].did != 5 || probes[path.IPv6].did != 0 {
			t.Errorf("no loss: %v, notes %q, ipv4 tried %d, ipv6 %d; want %q after 5 tries, ipv6 untried", err, j.Notes, probes[path.IPv4].did, probes[path.IPv6].did, want)
		}
	}
}
