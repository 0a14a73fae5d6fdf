//go:build integration

package clusters

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testSecretGoneBeforeDeletion: deleting a namespace deletes a mesh's
// kubeconfig Secrets and the mesh in no set order. A live mesh whose Secret
// is gone has no cluster there; once deleted, it gets back the connection
// the Secret last named (held meanwhile), and only to remove its Peers.
func (h *harness) testSecretGoneBeforeDeletion(t *testing.T) {
	ns := h.namespace(t)
	node := h.createNode(t, member1, "secret-gone")
	h.createPeer(t, member1, "secret-gone-peer")
	m, _, mesh := h.followMember(t, ns, "gone", member1)

	secrets := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(ns)
	if err := secrets.Delete(h.ctx, "member", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 30*time.Second, "the live mesh sees its Secret gone", func() error {
		if st := m.Snapshot(mesh)["member"]; st.Reason != memberaccess.ErrSecretNotFound || st.Synced {
			return fmt.Errorf("reason %q synced %v", st.Reason, st.Synced)
		}
		return nil
	})
	if _, err := m.Members(mesh)["member"].Peers(); !errors.Is(err, memberaccess.ErrSecretNotFound) {
		t.Errorf("PeerClient of a live mesh without its Secret: %v, want %s", err, memberaccess.ErrSecretNotFound)
	}

	deleted := mesh.DeepCopy()
	deleted.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	m.Follow(deleted)
	if st := m.Snapshot(deleted)["member"]; usable(st) != nil || !hasNode(st, node) || hasPeer(st, "secret-gone-peer") == nil {
		t.Fatalf("the deleted mesh does not see the cluster its Secret named: reason %q err %q", st.Reason, st.LastError)
	}
	pc, err := m.Members(deleted)["member"].Peers()
	if err != nil {
		t.Fatalf("PeerClient of the deleted mesh: %v", err)
	}
	if err := pc.Delete(h.ctx, "secret-gone-peer", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("removing a Peer through the kept connection: %v", err)
	}
	peers := h.env.Dynamic(member1, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
	if _, err := peers.Get(h.ctx, "secret-gone-peer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Peer is still there: %v", err)
	}

	// The kept connection goes with the mesh: nothing stays.
	m.Forget(deleted)
	framework.EventuallyT(t, 10*time.Second, "the kept connection released", func() error {
		if s := m.stats(); s.Clusters != 0 || s.Informers != 0 || s.SecretWatches != 0 {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
}
