package framework

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
)

// echo is a loopback server that answers each line with its name.
func echo(t *testing.T, name string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := c.Write([]byte(name + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln
}

func ask(t *testing.T, port int) string {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("who\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimSpace(line)
}

// TestTCPProxy: connections are spread over the backends; one that goes
// away is skipped at once; with none, connections are closed.
func TestTCPProxy(t *testing.T) {
	a, b := echo(t, "a"), echo(t, "b")
	defer b.Close()
	p, err := StartTCPProxy(0, a.Addr().String(), b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	seen := map[string]int{}
	for range 4 {
		seen[ask(t, p.Port)]++
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Errorf("answers %v, want two of each backend", seen)
	}
	a.Close()
	for range 4 {
		if got := ask(t, p.Port); got != "b" {
			t.Fatalf("with a gone, answered by %q", got)
		}
	}
	if got := p.Accepted(); got[0] != 2 || got[1] != 6 {
		t.Errorf("Accepted() = %v, want [2 6]", got)
	}
	b.Close()
	if got := ask(t, p.Port); got != "" {
		t.Errorf("without backends, answered by %q", got)
	}
	if _, err := StartTCPProxy(0, "10.0.0.1:443"); err == nil {
		t.Error("a backend outside loopback was taken")
	}
}
