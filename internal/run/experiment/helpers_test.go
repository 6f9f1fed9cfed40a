package experiment

import (
	"encoding/json"
	"testing"

	"v6lab/internal/gen/transport"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
)

// cellOf is a cell group of protocol with options set by name and text,
// as a file or flags give them (unchecked).
func cellOf(t testing.TB, protocol string, kv ...string) CellGroup {
	t.Helper()
	s := CellGroup{Protocol: protocol, Options: all.MustGet(protocol).New()}
	for i := 0; i+1 < len(kv); i += 2 {
		if err := proto.Set(s.Options, kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// opt is a cell group's option as text ("" when it has none).
func opt(c *CellGroup, name string) string {
	f, ok := proto.FieldOf(c.Opts(), name)
	if !ok {
		return ""
	}
	return f.Text()
}

// trialOf is a trial cell group's test.
func trialOf(c *CellGroup) *transport.Options {
	if t, ok := c.Options.(interface{ Transport() *transport.Options }); ok && t.Transport() != nil {
		return t.Transport()
	}
	return &transport.Options{}
}

// setOpt sets a cell group's option by name from text.
func setOpt(c *CellGroup, name, text string) error { return proto.Set(c.Options, name, text) }

// recorded is what a result records of a cell group's options.
func recorded(c *CellGroup) map[string]any {
	b, _ := json.Marshal(c.Options)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}
