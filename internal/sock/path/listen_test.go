package path

import (
	"strings"
	"testing"
)

func TestParseListen(t *testing.T) {
	addrs, port, err := ParseListen([]string{"127.0.0.1:8080", "[::1]:8080"})
	if err != nil || len(addrs) != 2 || port != 8080 {
		t.Fatalf("%v %d %v", addrs, port, err)
	}
	if _, _, err := ParseListen([]string{"127.0.0.1:1", "[::1]:2"}); err == nil || !strings.Contains(err.Error(), "same port") {
		t.Errorf("two ports: %v", err)
	}
	if _, _, err := ParseListen([]string{"localhost:1"}); err == nil || !strings.Contains(err.Error(), "not ADDR:PORT") {
		t.Errorf("a name: %v", err)
	}
}
