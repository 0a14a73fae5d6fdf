package validation

import (
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func validGrant() *meshv1alpha1.ClusterMeshGrant {
	return &meshv1alpha1.ClusterMeshGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a.meshes"},
		Spec: meshv1alpha1.ClusterMeshGrantSpec{
			Namespaces:     []string{"tenant-a"},
			MemberNetworks: []string{"10.52.0.0/16", "fd00:52::/56"},
			LocalNetworks:  []string{"10.42.0.0/16"},
			MemberServers:  []string{"203.0.113.0/24"},
		},
	}
}

func TestValidateClusterMeshGrant(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(g *meshv1alpha1.ClusterMeshGrant)
		want   []string
	}{
		{name: "valid", mutate: func(*meshv1alpha1.ClusterMeshGrant) {}},
		{name: "selector only", mutate: func(g *meshv1alpha1.ClusterMeshGrant) {
			g.Spec.Namespaces = nil
			g.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "allowed"}}
		}},
		{name: "every namespace, explicitly", mutate: func(g *meshv1alpha1.ClusterMeshGrant) {
			g.Spec.Namespaces, g.Spec.NamespaceSelector = nil, &metav1.LabelSelector{}
		}},
		{name: "only member servers", mutate: func(g *meshv1alpha1.ClusterMeshGrant) {
			g.Spec.MemberNetworks, g.Spec.LocalNetworks = nil, nil
		}},
		{name: "covers nothing", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.Namespaces = nil }, want: []string{"spec"}},
		{name: "namespace not a label", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.Namespaces = []string{"Tenant_A"} }, want: []string{"spec.namespaces[0]"}},
		{name: "service namespace not a label", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.ServiceNamespaces = []string{"ok", "Kube_System"} }, want: []string{"spec.serviceNamespaces[1]"}},
		{name: "duplicate namespace", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.Namespaces = []string{"a", "a"} }, want: []string{"spec.namespaces[1]"}},
		{name: "bad selector", mutate: func(g *meshv1alpha1.ClusterMeshGrant) {
			g.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "mesh", Operator: "Near"}}}
		}, want: []string{"spec.namespaceSelector.matchExpressions[0].operator"}},
		{name: "member network not canonical", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.MemberNetworks[1] = "fd00:52::1/56" }, want: []string{"spec.memberNetworks[1]"}},
		// The two halves of the address space are explicit; the default route is refused as in meshes.
		{name: "default route", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.LocalNetworks = []string{"0.0.0.0/0"} }, want: []string{"spec.localNetworks[0]"}},
		{name: "member server garbage", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.MemberServers = []string{"api.example.com"} }, want: []string{"spec.memberServers[0]"}},
		{name: "host Peer limits", mutate: func(g *meshv1alpha1.ClusterMeshGrant) {
			g.Spec.MaxHostPeers, g.Spec.MaxHostPeerKiB = ptr.To[int32](5000), ptr.To[int32](meshv1alpha1.MaxHostPeerKiBLimit)
		}},
		{name: "no host Peer at all", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Spec.MaxHostPeers = ptr.To[int32](0) }, want: []string{"spec.maxHostPeers"}},
		{name: "host Peers beyond the bound", mutate: func(g *meshv1alpha1.ClusterMeshGrant) {
			g.Spec.MaxHostPeers, g.Spec.MaxHostPeerKiB = ptr.To[int32](meshv1alpha1.MaxHostPeersLimit+1), ptr.To[int32](-1)
		}, want: []string{"spec.maxHostPeerKiB", "spec.maxHostPeers"}},
		{name: "name not a subdomain", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Name = "Team A" }, want: []string{"metadata.name"}},
		{name: "namespaced", mutate: func(g *meshv1alpha1.ClusterMeshGrant) { g.Namespace = "tenant-a" }, want: []string{"metadata.namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := validGrant()
			tt.mutate(g)
			var got []string
			for _, e := range ValidateClusterMeshGrant(g) {
				got = append(got, e.Field)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("want errors at %v, got %v", tt.want, ValidateClusterMeshGrant(g))
			}
		})
	}
}
