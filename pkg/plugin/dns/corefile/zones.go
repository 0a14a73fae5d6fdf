package corefile

import (
	"strings"
)

// normalZone is a zone in lower case without its final dot ("" for the
// root).
func normalZone(z string) string {
	z = strings.ToLower(strings.TrimSuffix(z, "."))
	if z == "" {
		return ""
	}
	return z
}

// sameZone tells whether a and b name one zone.
func sameZone(a, b string) bool { return normalZone(a) == normalZone(b) }

// within tells whether name is zone or below it.
func within(name, zone string) bool {
	n, z := normalZone(name), normalZone(zone)
	return z == "" || n == z || strings.HasSuffix(n, "."+z)
}

// serverKey is one key of a server block: its zone and port.
type serverKey struct {
	scheme, zone, port string
}

// serverKeys splits a server block's keys ("dns://.:53", "cluster.local:53,
// example.org") into zones and ports, 53 where a DNS key names none.
func serverKeys(s *ServerBlock) []serverKey {
	var out []serverKey
	for _, t := range s.Keys {
		for _, k := range strings.Split(t.Text, ",") {
			k = strings.TrimSpace(k)
			if k == "" {
				continue
			}
			var key serverKey
			if i := strings.Index(k, "://"); i >= 0 {
				key.scheme, k = k[:i], k[i+3:]
			}
			if i := strings.LastIndex(k, ":"); i >= 0 {
				k, key.port = k[:i], k[i+1:]
			}
			if key.port == "" && key.plainDNS() {
				key.port = "53" // CoreDNS's default
			}
			key.zone = normalZone(k)
			out = append(out, key)
		}
	}
	return out
}

// plainDNS tells whether the key serves DNS over UDP and TCP, the way pods
// ask.
func (k serverKey) plainDNS() bool { return k.scheme == "" || k.scheme == "dns" }

// reverseZone tells whether a zone is one of the reverse-lookup trees.
func reverseZone(z string) bool {
	return within(z, "in-addr.arpa") || within(z, "ip6.arpa")
}
