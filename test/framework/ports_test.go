package framework

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePorts(t *testing.T) {
	lo, hi := testPortRange()
	ports, err := FreePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 50 {
		t.Fatalf("got %d ports, want 50", len(ports))
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		// Outside the ephemeral range: no outgoing connection takes it.
		if p < lo || p >= hi {
			t.Errorf("port %d outside [%d, %d)", p, lo, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}
