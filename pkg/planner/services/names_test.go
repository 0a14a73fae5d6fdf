package services

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestDerivedServiceName: the name the upstream reference controller and
// Cilium derive (expected values computed apart, with Python's hashlib and
// base64.b32hexencode), so that another implementation's derived Service
// would be recognised as taken rather than overwritten.
func TestDerivedServiceName(t *testing.T) {
	for _, tc := range []struct{ ns, name, want string }{
		{"shop", "cart", "derived-bsqa4s8pq5"},
		{"default", "hello", "derived-k5cuvo1ge4"},
	} {
		t.Run(tc.ns+"/"+tc.name, func(t *testing.T) {
			if got := DerivedServiceName(tc.ns, tc.name); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if errs := validation.IsDNS1035Label(DerivedServiceName(tc.ns, tc.name)); len(errs) > 0 {
				t.Errorf("not a Service name: %v", errs)
			}
		})
	}
}

// TestSliceName: slice names are valid and distinct for distinct keys,
// however long the readable parts.
func TestSliceName(t *testing.T) {
	long := strings.Repeat("x", 63)
	for _, tc := range []struct{ name, prefix, source string }{
		{"short", "cart", "a"},
		{"longest parts", strings.Repeat("s", 63), long},
		{"trailing dash after trimming", strings.Repeat("s", 180) + "-", long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one, two := sliceName(tc.prefix, tc.source, "IPv4", "k", "0"), sliceName(tc.prefix, tc.source, "IPv4", "k", "1")
			for _, n := range []string{one, two} {
				if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
					t.Errorf("%q: %v", n, errs)
				}
			}
			if one == two {
				t.Errorf("two chunks share the name %s", one)
			}
		})
	}
}
