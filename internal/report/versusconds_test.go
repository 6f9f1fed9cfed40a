package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareNamesEveryConditionThatDiffers (trial 6): A on 1 Gbit/s
// links without loss, B unshaped with 2% loss, on another kernel: compare
// says so, setting by setting, in text and JSON; the lab's own name and
// ports are not conditions.
func TestCompareNamesEveryConditionThatDiffers(t *testing.T) {
	a := &Summary{Target: "lab", Lab: map[string]string{
		"name": "runa", "wire_check_ports": "x=1", "tunnel": "bpf", "tunnel_mtu": "1480",
		"links":  "client-r1 1000 Mbit/s, mtu 1500",
		"config": `{"Name":"runa","shaping":{"Rate":1000000000,"Loss":0}}`,
	}, Machine: map[string]string{"kernel": "6.18", "tool": "v6lab 1", "host": "vm"}}
	b := &Summary{Target: "lab", Lab: map[string]string{
		"name": "runb", "wire_check_ports": "x=2", "tunnel": "bpf", "tunnel_mtu": "1480",
		"links":  "client-r1 unshaped, loss 2%, mtu 1500",
		"config": `{"Name":"runb","shaping":{"Rate":0,"Loss":2}}`,
	}, Machine: map[string]string{"kernel": "6.19", "tool": "v6lab 1", "host": "vm"}}
	v := CompareSummaries("A", a, "B", b)
	want := []string{
		"A and B were measured under different conditions (below): their differences include these",
		"lab config.shaping.Loss differs: A 0; B 2",
		"lab config.shaping.Rate differs: A 1000000000; B 0",
		"lab links differs: A client-r1 1000 Mbit/s, mtu 1500; B client-r1 unshaped, loss 2%, mtu 1500",
		"machine kernel differs: A 6.18; B 6.19",
	}
	if strings.Join(v.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant\n%s", strings.Join(v.Notes, "\n"), strings.Join(want, "\n"))
	}
	var text, js bytes.Buffer
	VersusText(&text, v)
	VersusJSON(&js, v)
	if !strings.Contains(text.String(), "note: lab config.shaping.Loss differs: A 0; B 2\n") {
		t.Errorf("text:\n%s", text.String())
	}
	var back Versus
	if json.Unmarshal(js.Bytes(), &back) != nil || len(back.Notes) != len(want) {
		t.Errorf("json:\n%s", js.String())
	}
	if same := CompareSummaries("A", a, "A", a); len(same.Notes) != 0 {
		t.Errorf("a result against itself: %q", same.Notes)
	}
}
