package reconciler

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

func TestWithoutStrays(t *testing.T) {
	endpoint := &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820}
	other := &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.9"}, Port: 51820}
	peer := func(keepalive int, e *kilov1alpha1.PeerEndpoint) *kilov1alpha1.Peer {
		return &kilov1alpha1.Peer{
			ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "7", Finalizers: []string{"example.com/keep"}},
			Spec:       kilov1alpha1.PeerSpec{AllowedIPs: []string{"10.0.0.0/24"}, PublicKey: "k", PersistentKeepalive: keepalive, Endpoint: e},
		}
	}
	for _, c := range []struct {
		name       string
		want, live *kilov1alpha1.Peer
		fixed      *kilov1alpha1.Peer // nil: nothing stray
	}{
		{"same", peer(0, endpoint), peer(0, endpoint), nil},
		{"values the apply set", peer(5, endpoint), peer(5, endpoint), nil},
		{"keepalive set by someone else", peer(0, endpoint), peer(7, endpoint), peer(0, endpoint)},
		{"endpoint set on a roaming Peer", peer(25, nil), peer(25, other), peer(25, nil)},
		{"both", peer(0, nil), peer(3, other), peer(0, nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.live.DeepCopy()
			fixed, ok := withoutStrays(c.want, c.live)
			if ok != (c.fixed != nil) {
				t.Fatalf("stray fields found = %v, want %v", ok, c.fixed != nil)
			}
			if ok && !equality.Semantic.DeepEqual(fixed, c.fixed) {
				t.Errorf("fixed = %+v, want %+v (metadata kept)", fixed, c.fixed)
			}
			if !equality.Semantic.DeepEqual(before, c.live) {
				t.Error("withoutStrays modified the live object")
			}
		})
	}
}
