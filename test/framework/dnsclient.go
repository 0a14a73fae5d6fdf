package framework

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSAnswer is what a DNS server answered to one question.
type DNSAnswer struct {
	RCode dnsmessage.RCode
	// Addrs are the A and AAAA records of the answer section, sorted.
	Addrs []netip.Addr
	// SRV are its SRV records, sorted.
	SRV []DNSSRV
}

// DNSSRV is one SRV record.
type DNSSRV struct {
	Target string
	Port   uint16
}

func (a *DNSAnswer) String() string {
	var parts []string
	for _, ip := range a.Addrs {
		parts = append(parts, ip.String())
	}
	for _, s := range a.SRV {
		parts = append(parts, fmt.Sprintf("%s:%d", s.Target, s.Port))
	}
	return fmt.Sprintf("%s %v", a.RCode, parts)
}

// QueryDNS asks server, a loopback address, one question over UDP (the way
// a pod's resolver does) and returns the answer. name is taken as fully
// qualified.
func QueryDNS(server netip.AddrPort, name string, qtype dnsmessage.Type, timeout time.Duration) (*DNSAnswer, error) {
	q, err := dnsmessage.NewName(strings.TrimSuffix(name, ".") + ".")
	if err != nil {
		return nil, err
	}
	resp, err := exchangeDNS(server, dnsmessage.Question{Name: q, Type: qtype, Class: dnsmessage.ClassINET}, timeout)
	if err != nil {
		return nil, fmt.Errorf("asking %s for %s %s: %w", server, name, qtype, err)
	}
	return answerOf(resp), nil
}

// answersDNS returns nil once server answers a question at all, over UDP:
// a CHAOS-class one, which a server such as CoreDNS answers by itself
// (REFUSED, unless a plugin serves that class) without asking a backend.
func answersDNS(server netip.AddrPort, timeout time.Duration) error {
	q := dnsmessage.Question{Name: dnsmessage.MustNewName("version.bind."), Type: dnsmessage.TypeTXT, Class: dnsmessage.ClassCHAOS}
	if _, err := exchangeDNS(server, q, timeout); err != nil {
		return fmt.Errorf("asking %s for version.bind CHAOS TXT: %w", server, err)
	}
	return nil
}

// exchangeDNS sends q to server, a loopback address, and returns the
// response to it, whatever its RCODE.
func exchangeDNS(server netip.AddrPort, q dnsmessage.Question, timeout time.Duration) (*dnsmessage.Message, error) {
	// Tests send packets to loopback only.
	if !server.Addr().IsLoopback() {
		return nil, fmt.Errorf("DNS server %s: only loopback addresses", server)
	}
	var idb [2]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, err
	}
	id := binary.BigEndian.Uint16(idb[:])
	msg := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{q},
	}
	packed, err := msg.Pack()
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(server))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := conn.Write(packed); err != nil {
		return nil, err
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, err
		}
		var resp dnsmessage.Message
		if err := resp.Unpack(buf[:n]); err != nil || resp.ID != id || !resp.Response {
			continue // not the answer to this question
		}
		if resp.Truncated {
			return nil, errors.New("the answer is truncated")
		}
		return &resp, nil
	}
}

func answerOf(m *dnsmessage.Message) *DNSAnswer {
	a := &DNSAnswer{RCode: m.RCode}
	for _, rr := range m.Answers {
		switch b := rr.Body.(type) {
		case *dnsmessage.AResource:
			a.Addrs = append(a.Addrs, netip.AddrFrom4(b.A))
		case *dnsmessage.AAAAResource:
			a.Addrs = append(a.Addrs, netip.AddrFrom16(b.AAAA))
		case *dnsmessage.SRVResource:
			a.SRV = append(a.SRV, DNSSRV{Target: b.Target.String(), Port: b.Port})
		}
	}
	slices.SortFunc(a.Addrs, netip.Addr.Compare)
	slices.SortFunc(a.SRV, func(x, y DNSSRV) int {
		if c := strings.Compare(x.Target, y.Target); c != 0 {
			return c
		}
		return int(x.Port) - int(y.Port)
	})
	return a
}
