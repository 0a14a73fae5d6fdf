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
