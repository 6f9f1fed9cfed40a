// Package units reads the sizes and rates users type: "64K", "1MiB",
// "100M", "10Mbit". Sizes are bytes in powers of 1024; rates are bits per
// second in powers of 1000, as tc and iperf read them.
//
// It imports nothing of v6lab.
package units

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a byte count: a plain number or one with a K, M, G or T
// suffix (powers of 1024; "KiB"/"KB" spellings accepted).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(strings.TrimSuffix(u, "IB"), "B")
	if u != "" {
		switch u[len(u)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			u = u[:len(u)-1]
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 || (mult > 1 && n > (1<<62)/mult) {
		return 0, fmt.Errorf("bad size %q (want bytes, or a number with K, M, G or T)", s)
	}
	return n * mult, nil
}

// ParseRate reads "100M", "10Mbit", "1.5G", "64k" or plain bits per second.
func ParseRate(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bit/s"), "bit")
	t = strings.TrimSuffix(t, "bps")
	mult := 1.0
	if t != "" {
		switch t[len(t)-1] {
		case 'k':
			mult = 1e3
		case 'm':
			mult = 1e6
		case 'g':
			mult = 1e9
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v >= 0) || v*mult > 1e12 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad rate %q (want e.g. 10M, 100Mbit, 1G)", s)
	}
	if v > 0 && v*mult < 1 {
		// Never round a rate that was asked for down to 0 (unshaped).
		return 0, fmt.Errorf("bad rate %q: below 1 bit/s", s)
	}
	return uint64(v * mult), nil
}

// Rate prints bits per second the way ParseRate reads them back.
func Rate(bps uint64) string {
	switch {
	case bps == 0:
		return "0"
	case bps%1e9 == 0:
		return fmt.Sprintf("%dG", bps/1e9)
	case bps%1e6 == 0:
		return fmt.Sprintf("%dM", bps/1e6)
	case bps%1e3 == 0:
		return fmt.Sprintf("%dk", bps/1e3)
	}
	return strconv.FormatUint(bps, 10)
}

// ParseCounts reads a comma-separated list of whole numbers of at least 1
// (connection counts: "1,10,100").
func ParseCounts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty list")
	}
	var out []int
	for i, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			return nil, fmt.Errorf("%q: entry %d is empty (a comma too many)", s, i+1)
		}
		n, err := strconv.Atoi(f)
		if err != nil || strconv.Itoa(n) != f {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		if n < 1 {
			return nil, fmt.Errorf("%d: must be at least 1", n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// Bytes is a size an option gives as text ("4096", "100K", "1MiB") and a
// result records as a number.
type Bytes int64

// UnmarshalText reads a size (ParseSize) of at most 2^31-1 bytes.
func (b *Bytes) UnmarshalText(t []byte) error {
	n, err := ParseSize(string(t))
	if err != nil || n > 1<<31-1 {
		return fmt.Errorf("%q: want bytes, such as 4096 or 100K", t)
	}
	*b = Bytes(n)
	return nil
}

// UnmarshalJSON reads the number a result records (and a size as text):
// a lab run hands its cell groups to its measuring process as JSON, and
// a resume reads them back from the header.
func (b *Bytes) UnmarshalJSON(j []byte) error {
	if len(j) > 0 && j[0] == '"' {
		var s string
		if err := json.Unmarshal(j, &s); err != nil {
			return err
		}
		return b.UnmarshalText([]byte(s))
	}
	return b.UnmarshalText(j)
}
