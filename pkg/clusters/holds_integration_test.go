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

// testDepartedHeld: an entry that leaves its mesh keeps its connection,
// held, also once its Secret is deleted, until Release; a held connection
// removes Peers and is listed by Held, and nothing else keeps it open.
func (h *harness) testDepartedHeld(t *testing.T) {
	ns := h.namespace(t)
	h.createPeer(t, member1, "held-peer")
	m, _, mesh := h.followMember(t, ns, "leaving", member1, func(c *Config) { c.HoldDeparted = time.Minute })
	identity := m.Identities(mesh)["member"]

	left := mesh.DeepCopy()
	left.Spec.Clusters = left.Spec.Clusters[:1]
	m.Follow(left)
	secrets := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(ns)
	if err := secrets.Delete(h.ctx, "member", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	key := HoldKey{Mesh: meshKey(mesh), Entry: "member", Owner: OwnerDeparted}
	held := m.Held(meshKey(mesh))
	if len(held) != 1 || held[0].Key != key || held[0].Identity != identity || held[0].Identity == "" {
		t.Fatalf("Held = %+v, want the departed entry's connection of identity %q", held, identity)
	}
	if err := usable(held[0].State); err != nil || hasPeer(held[0].State, "held-peer") == nil {
		t.Fatalf("the held connection is not usable or lacks the Peer: %v", err)
	}
	pc, err := m.HeldPeerClient(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Delete(h.ctx, "held-peer", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("removing a Peer through the held connection: %v", err)
	}
	peers := h.env.Dynamic(member1, framework.UserAdmin).Resource(kilov1alpha1.PeerResource)
	if _, err := peers.Get(h.ctx, "held-peer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Peer is still there: %v", err)
	}
	// local (followed) + the held member; no Secret watch is left.
	if s := m.stats(); s.Clusters != 2 || s.SecretWatches != 0 {
		t.Errorf("while held: %+v", s)
	}

	m.Release(key)
	if len(m.Held(meshKey(mesh))) != 0 {
		t.Error("the hold survives its Release")
	}
	if _, err := m.HeldPeerClient(key); !errors.Is(err, memberaccess.ErrUnknownCluster) {
		t.Errorf("HeldPeerClient after Release: %v", err)
	}
	framework.EventuallyT(t, 10*time.Second, "the held connection closed", func() error {
		if s := m.stats(); s.Clusters != 1 {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
}

// testHoldAfterRepoint: a hold taken for an entry whose Secret was replaced
// by one for another cluster reaches the cluster the Secret names now,
// never the departed hold's cluster of the same entry name; a hold for the
// same content shares the departed hold's connection.
func (h *harness) testHoldAfterRepoint(t *testing.T) {
	ns := h.namespace(t)
	m, _, mesh := h.followMember(t, ns, "repointed", member1, func(c *Config) { c.HoldDeparted = time.Minute })
	oldIdentity := m.Identities(mesh)["member"]

	h.putSecret(t, ns, "member", h.kubeconfig(member2, framework.UserAdmin))
	var newIdentity string
	framework.EventuallyT(t, 30*time.Second, "the entry on the new cluster, the old one held", func() error {
		newIdentity = m.Identities(mesh)["member"]
		held := m.Held(meshKey(mesh))
		if newIdentity == "" || newIdentity == oldIdentity || len(held) != 1 || held[0].Identity != oldIdentity {
			return fmt.Errorf("identity %q (was %q), held %+v", newIdentity, oldIdentity, held)
		}
		return nil
	})
	// The mesh is deleted: its bindings go before a hold is taken for it.
	m.Forget(ns, mesh.Name)
	key := HoldKey{Mesh: meshKey(mesh), Entry: "member", Owner: "deleted"}
	m.Hold(key, mesh, time.Minute)
	framework.EventuallyT(t, 30*time.Second, "the hold on the cluster the Secret names", func() error {
		for _, hd := range m.Held(meshKey(mesh)) {
			if hd.Key != key {
				continue
			}
			if hd.Identity == oldIdentity {
				t.Fatalf("the hold reaches the departed cluster %q, not the one the Secret names", hd.Identity)
			}
			if hd.Identity != newIdentity {
				return fmt.Errorf("hold %+v", hd)
			}
			return nil
		}
		return errors.New("no hold")
	})
	m.Release(key)

	// The Secret names the old cluster again: a hold shares the departed
	// hold's connection, as the same content resolves to it.
	h.putSecret(t, ns, "member", h.kubeconfig(member1, framework.UserAdmin))
	before := m.stats().Clusters
	m.Hold(key, mesh, time.Minute)
	framework.EventuallyT(t, 30*time.Second, "the hold on the departed hold's connection", func() error {
		for _, hd := range m.Held(meshKey(mesh)) {
			if hd.Key == key && hd.Identity == oldIdentity {
				return nil
			}
		}
		return fmt.Errorf("held %+v", m.Held(meshKey(mesh)))
	})
	if after := m.stats().Clusters; after != before {
		t.Errorf("connections %d -> %d: the same content opened another", before, after)
	}
	m.Release(key)
}
