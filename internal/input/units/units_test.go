package units

import (
	"encoding/json"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "64K": 64 << 10, "1M": 1 << 20, "2GiB": 2 << 30, "5.6": -1, "-1": -1, "M": -1, "99999999999T": -1} {
		got, err := ParseSize(in)
		if want < 0 {
			if err == nil {
				t.Errorf("%q accepted as %d", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]uint64{"10M": 10e6, "100Mbit": 100e6, "1.5G": 1.5e9, "64k": 64e3, "2500": 2500, "100mbit/s": 100e6} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("%q = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"fast", "-1M", "M", "10T"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRateRoundTrips(t *testing.T) {
	for _, r := range []uint64{0, 1, 8000, 10e6, 100e6, 1e9, 1500, 2500000} {
		back, err := ParseRate(Rate(r))
		if err != nil || back != r {
			t.Errorf("%d -> %q -> %d, %v", r, Rate(r), back, err)
		}
	}
}

func TestParseCounts(t *testing.T) {
	if got, err := ParseCounts(" 1, 10,100 "); err != nil || len(got) != 3 || got[2] != 100 {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"", ",", "0", "1,x", "1.5", "-3", "010"} {
		if _, err := ParseCounts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestBytesJSON: a size a result records as a number reads back, as does
// one given as text; a bad one is an error.
func TestBytesJSON(t *testing.T) {
	var v struct {
		Size Bytes `json:"size"`
	}
	for in, want := range map[string]Bytes{`{"size":4096}`: 4096, `{"size":"100K"}`: 100 << 10, `{"size":262144}`: 256 << 10} {
		if err := json.Unmarshal([]byte(in), &v); err != nil || v.Size != want {
			t.Errorf("%s: %d, %v; want %d", in, v.Size, err, want)
		}
	}
	b, _ := json.Marshal(Bytes(4096))
	if string(b) != "4096" {
		t.Errorf("marshals as %s", b)
	}
	for _, in := range []string{`{"size":-1}`, `{"size":"lots"}`, `{"size":1e12}`} {
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
}
