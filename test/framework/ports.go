package framework

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// FreePorts returns n distinct free TCP ports on 127.0.0.1 for child
// processes, which listen on them after this returns, and again after a
// restart (StartCluster, a MeshServer's restart).
//
// The ports are taken below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), never from it: every outgoing connection
// of every process on the machine takes its source port from that range,
// and one that happens to hold a stopped server's port while it is down
// makes its restart fail with "address already in use". Below the range a
// port is only ever taken by someone listening on it on purpose.
func FreePorts(n int) ([]int, error) {
	lo, hi := testPortRange()
	// Hold all listeners open until every port is known, so that the ports
	// are distinct.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("no %d free ports in %d-%d", n, lo, hi-1)
		}
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// testPortRange returns [lo, hi): the 10,000 ports below the ephemeral
// range, or below 32768 (Linux's default start of it) if it cannot be read.
func testPortRange() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				hi = v
			}
		}
	}
	return max(hi-10000, 1024), hi
}
