package admission

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// tableResolver resolves names from a table; nothing is looked up for real.
type tableResolver map[string][]netip.Addr

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestCheckServers(t *testing.T) {
	policy := memberaccess.StaticServerPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	p := &Plugin{
		resolver: tableResolver{
			"member.example":   {netip.MustParseAddr("127.0.0.5")},
			"metadata.example": {netip.MustParseAddr("127.0.0.5"), netip.MustParseAddr("169.254.169.254")},
		},
	}
	mesh := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	for range 5 {
		mesh.Spec.Clusters = append(mesh.Spec.Clusters, meshv1alpha1.ClusterEntry{KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "s"}})
	}
	servers := []string{
		"https://127.0.0.1:6443",               // allowed
		"https://[::1]:6443",                   // loopback, but not the allowed network
		"https://member.example:443",           // resolves inside
		"https://metadata.example:443",         // one of its addresses is the metadata service
		"https://does-not-resolve.example:443", // left to the dialer
	}
	var got []string
	for _, e := range p.checkServers(context.Background(), mesh, servers, policy) {
		got = append(got, e.Field)
		if !strings.Contains(e.Detail, "may not be used") {
			t.Errorf("unexpected message: %s", e.Detail)
		}
	}
	want := "spec.clusters[1].kubeconfigSecretRef,spec.clusters[3].kubeconfigSecretRef"
	if strings.Join(got, ",") != want {
		t.Errorf("errors at %v, want %s", got, want)
	}
}
