package memberaccess

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckServerAddress(t *testing.T) {
	loopback := mustPrefixes("127.0.0.0/8")
	for _, tc := range []struct {
		addr    string
		allowed []netip.Prefix
		want    string // "" allowed, else a word of the refusal
	}{
		// Public addresses only, by default.
		{"8.8.8.8", nil, ""},
		{"2a00:1450:4001::1", nil, ""},
		{"10.1.2.3", nil, "not a public address"},
		{"192.168.1.1", nil, "not a public address"},
		{"100.64.0.1", nil, "not a public address"},
		{"fd12::1", nil, "not a public address"},
		{"127.0.0.1", nil, "loopback"},
		{"::1", nil, "loopback"},
		{"::ffff:127.0.0.1", nil, "loopback"},
		{"0.0.0.0", nil, "unspecified"},
		{"0.1.2.3", nil, "unspecified"},
		{"::", nil, "unspecified"},
		{"169.254.1.1", nil, "link-local"},
		{"fe80::1%eth0", nil, "link-local"},
		{"169.254.169.254", nil, "metadata"},
		{"::ffff:169.254.169.254", nil, "metadata"},
		{"fd00:ec2::254", nil, "metadata"},
		{"100.100.100.200", nil, "metadata"},
		{"192.0.0.192", nil, "metadata"},
		// A listed network allows what is inside it, and nothing else.
		{"127.0.0.1", loopback, ""},
		{"127.1.2.3", loopback, ""},
		{"::1", loopback, "loopback"},
		{"8.8.8.8", loopback, "outside the networks allowed"},
		{"10.0.0.1", mustPrefixes("10.0.0.0/8"), ""},
		// Guarded ranges need a network inside them, however wide the list.
		{"127.0.0.1", mustPrefixes("0.0.0.0/1"), "loopback"},
		{"169.254.169.254", mustPrefixes("169.254.0.0/16"), "metadata"},
		{"169.254.169.254", mustPrefixes("169.254.169.254/32"), ""},
		{"169.254.1.1", mustPrefixes("169.254.0.0/16"), ""},
		{"0.0.0.0", mustPrefixes("0.0.0.0/1"), "unspecified"},
	} {
		err := CheckServerAddress(netip.MustParseAddr(tc.addr), tc.allowed)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s with %v: refused: %v", tc.addr, tc.allowed, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s with %v: allowed, want a refusal (%s)", tc.addr, tc.allowed, tc.want)
		case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || reasonOf(err) != ErrServerNotAllowed):
			t.Errorf("%s with %v: %v, want %s (%s)", tc.addr, tc.allowed, err, tc.want, ErrServerNotAllowed)
		}
	}
}

// TestPolicyDialer: the dialer refuses a forbidden address before the
// connection, also when a name resolves to it. The refusals are first
// shown on loopback, where a listener can tell that nothing arrived; the
// link-local and metadata addresses are only dialled once that is shown,
// so that no packet ever leaves this machine.
func TestPolicyDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	refused := func(t *testing.T, dial func(context.Context, string, string) (net.Conn, error), address string) {
		t.Helper()
		c, err := dial(ctx, "tcp", address)
		if err == nil {
			c.Close()
			t.Fatalf("dialling %s succeeded", address)
		}
		if !errors.Is(err, ErrRefusedAddress) {
			t.Fatalf("dialling %s: %v, want a refusal by the policy", address, err)
		}
	}

	public := policyDialer(nil)
	refused(t, public, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	// A name is checked as what it resolves to (localhost: /etc/hosts).
	refused(t, public, net.JoinHostPort("localhost", strconv.Itoa(port)))
	// The listener must not have seen a connection: the check came first.
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the listener accepted %d connections the policy refused", n)
	}
	allowed := policyDialer(mustPrefixes("127.0.0.0/8"))
	c, err := allowed(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("dialling an allowed address: %v", err)
	}
	c.Close()

	for _, addr := range []string{"169.254.169.254", "169.254.10.1", "[fe80::1]", "[fd00:ec2::254]", "100.100.100.200", "0.0.0.0"} {
		t.Run(addr, func(t *testing.T) {
			// Even with the loopback network allowed.
			refused(t, allowed, addr+":80")
		})
	}
}
