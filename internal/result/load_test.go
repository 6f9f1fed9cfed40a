package result

import (
	"strings"
	"testing"
	"time"
)

func TestDecideSaturation(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, c := range []struct {
		name         string
		l            Load
		client, host bool
		why          string
	}{
		{"idle", Load{CPUs: 2, ClientCPU: 0.3, HostBusy: 0.4, HostTicks: 200}, false, false, ""},
		{"client on all its CPUs", Load{CPUs: 1, ClientCPU: 0.97, HostBusy: 0.6, HostTicks: 200}, true, false, "the client used 0.97 of the 1 CPUs"},
		{"host busy, replies read at once", Load{CPUs: 2, ClientCPU: 0.8, HostBusy: 0.99, HostTicks: 200, LagReads: 5000, LagP50NS: ms / 50, MedianNS: ms}, false, true, "the host's CPUs were 99% busy"},
		{"host busy, replies waited", Load{CPUs: 2, ClientCPU: 0.8, HostBusy: 0.99, HostTicks: 200, LagReads: 5000, LagP50NS: ms / 4, MedianNS: ms}, true, true, "replies waited 250µs (median) for the client, 25%"},
		{"one CPU, mostly used, replies waited", Load{CPUs: 1, ClientCPU: 0.85, HostBusy: 0.7, HostTicks: 200, LagReads: 5000, LagP50NS: ms / 2, MedianNS: ms}, true, false, "the client used 0.85 of the 1 CPUs it may use; replies waited 500µs"},
		{"replies waited, CPUs to spare", Load{CPUs: 2, ClientCPU: 0.6, HostBusy: 0.7, HostTicks: 200, LagReads: 5000, LagP50NS: ms / 2, MedianNS: ms}, false, false, ""},
		{"too few reads for the lag", Load{CPUs: 2, ClientCPU: 0.8, HostBusy: 0.99, HostTicks: 200, LagReads: 10, LagP50NS: ms / 4, MedianNS: ms}, false, true, ""},
		{"too few ticks for the host", Load{CPUs: 2, ClientCPU: 0.1, HostBusy: 1, HostTicks: 3, LagReads: 5000, LagP50NS: ms / 4, MedianNS: ms}, false, false, ""},
	} {
		l := c.l
		Decide(&l)
		if l.Client != c.client || l.Host != c.host || !strings.Contains(l.Why, c.why) {
			t.Errorf("%s: client %v host %v (%q), want %v %v (%q)", c.name, l.Client, l.Host, l.Why, c.client, c.host, c.why)
		}
	}
}
