package planner

import (
	"strings"
	"testing"

	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

func TestPeerName(t *testing.T) {
	long := strings.Repeat("x", 63)
	for _, tc := range []struct{ ns, mesh, cluster, group string }{
		{"team-a", "prod", "eu", "location:fra"},
		{"team-a", "prod", "eu", "location:"},
		{"team-a", "prod", "eu", "location:Zürich Nord..1"},
		{"team-a", "prod", "us", "node:ip-10-0-0-1.ec2.internal"},
		{long, long, long, "node:" + strings.Repeat("n.", 120)},
		{"", "", "", ""},
	} {
		name := PeerName(tc.ns, tc.mesh, tc.cluster, tc.group)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("PeerName(%q, %q, %q, %q) = %q: %v", tc.ns, tc.mesh, tc.cluster, tc.group, name, errs)
		}
		if PeerName(tc.ns, tc.mesh, tc.cluster, tc.group) != name {
			t.Error("PeerName is not deterministic")
		}
	}

	// Equal meshes in two namespaces, and inputs that read alike once
	// sanitised or truncated, still get different names.
	distinct := map[string]string{}
	for _, in := range [][4]string{
		{"team-a", "prod", "eu", "location:fra"},
		{"team-b", "prod", "eu", "location:fra"},
		{"team-a", "prod-eu", "", "location:fra"},
		{"team-a", "prod", "eu", "location-fra"},
		{"team-a", "prod", "eu", "location:FRA"},
		{long, long, long, "node:" + strings.Repeat("a", 200) + "1"},
		{long, long, long, "node:" + strings.Repeat("a", 200) + "2"},
	} {
		name := PeerName(in[0], in[1], in[2], in[3])
		if prev, ok := distinct[name]; ok {
			t.Errorf("%v and %s share the name %s", in, prev, name)
		}
		distinct[name] = strings.Join(in[:], "/")
	}
}

func TestIsManagedBy(t *testing.T) {
	labels := ManagedLabels("team-a", "prod", "uid-1", "eu")
	p := &kilov1alpha1.Peer{}
	p.Labels = labels
	if !IsManagedBy(p, "team-a", "prod", "uid-1") {
		t.Error("own Peer not recognised")
	}
	for _, tc := range []struct{ ns, name, uid string }{
		{"team-a", "prod", "uid-2"}, // an earlier mesh of the same name
		{"team-b", "prod", "uid-1"},
		{"team-a", "test", "uid-1"},
		{"team-a", "prod", ""},
	} {
		if IsManagedBy(p, tc.ns, tc.name, k8stypes.UID(tc.uid)) {
			t.Errorf("Peer of %v claimed as managed", tc)
		}
	}
	if IsManagedBy(&kilov1alpha1.Peer{}, "team-a", "prod", "uid-1") {
		t.Error("unlabelled Peer claimed as managed")
	}
}

// Peer names are what the mesh's existing Peers are found by: they must
// never change. appendPeerName must append exactly PeerName's result,
// whatever the buffer holds.
func TestPeerNameStable(t *testing.T) {
	x, long := strings.Repeat("x", 63), strings.Repeat("x", 63)
	for _, tc := range []struct{ ns, mesh, cluster, group, want string }{
		{"team-a", "prod", "eu", "location:fra", "prod-eu-location-fra-seot2x2cjd"},
		{"team-a", "prod", "eu", "location:", "prod-eu-location-z4q2i6veb3"},
		{"team-a", "prod", "eu", "location:Zürich Nord..1", "prod-eu-location-z-rich-nord-1-cjgx7hcoys"},
		{"team-a", "prod", "us", "node:ip-10-0-0-1.ec2.internal", "prod-us-node-ip-10-0-0-1-ec2-internal-kbkuw5jgyp"},
		{long, long, long, "node:" + strings.Repeat("n.", 120), x + "-" + x + "-node-" + strings.Repeat("n-", 55) + "qqyxrnmc77"},
		{"", "", "", "", "347wdgaeve"},
		{"-", "--", "-", "-", "2esnda5yrj"},
		{long, long, long, "node:" + strings.Repeat("a", 200) + "1", x + "-" + x + "-node-" + strings.Repeat("a", 109) + "-svwpelgbay"},
		{long, strings.Repeat("y", 179) + "-", "", "", strings.Repeat("y", 179) + "-rc7kezkwvq"},
	} {
		if got := PeerName(tc.ns, tc.mesh, tc.cluster, tc.group); got != tc.want {
			t.Errorf("PeerName(%q, %q, %q, %q) = %q, want %q", tc.ns, tc.mesh, tc.cluster, tc.group, got, tc.want)
		}
		for _, prefix := range []string{"", "-", "abc-", "--"} {
			if got := string(appendPeerName([]byte(prefix), tc.ns, tc.mesh, tc.cluster, tc.group)); got != prefix+tc.want {
				t.Errorf("appendPeerName(%q, %q, %q, %q, %q) = %q, want %q", prefix, tc.ns, tc.mesh, tc.cluster, tc.group, got, prefix+tc.want)
			}
		}
	}
}
