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
// lists and removes Peers and is listed by Held, and nothing else keeps it
// open.
func (h *harness) testDepartedHeld(t *testing.T) {
	ns := h.namespace(t)
	h.createPeer(t, member1, "held-peer")
	m, _, mesh := h.followMember(t, ns, "leaving", member1)
	m.KeepFor(time.Minute)
	identity := m.Identities(mesh)["member"]

	left := mesh.DeepCopy()
	left.Spec.Clusters = left.Spec.Clusters[:1]
	m.Follow(left)
	secrets := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(ns)
	if err := secrets.Delete(h.ctx, "member", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	key := HoldKey{Mesh: meshKey(mesh), UID: mesh.UID, Entry: "member", Why: HoldDeparted}
	held := m.Held(meshKey(mesh))
	if len(held) != 1 || held[0].Hold == nil || held[0].Hold.Key != key || held[0].State.Identity != identity || identity == "" {
		t.Fatalf("Held = %+v, want the departed entry's connection of identity %q", held, identity)
	}
	if err := usable(held[0].State); err != nil || hasPeer(held[0].State, "held-peer") == nil {
		t.Fatalf("the held connection is not usable or lacks the Peer: %v", err)
	}
	live, err := held[0].List(h.ctx, KindPeer, "", 500, "")
	if err != nil || len(live.Items) == 0 {
		t.Fatalf("listing the Peers of the held connection: %v", err)
	}
	peer := hasPeer(held[0].State, "held-peer")
	if err := held[0].Delete(h.ctx, KindPeer, "", "held-peer", peer.UID); err != nil {
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
	if _, err := held[0].Peers(); !errors.Is(err, memberaccess.ErrClusterReplaced) {
		t.Errorf("writing through a released hold: %v", err)
	}
	framework.EventuallyT(t, 10*time.Second, "the held connection closed", func() error {
		if s := m.stats(); s.Clusters != 1 {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
}

// testDeletedHeld: an entry whose Secret is repointed at another cluster
// leaves its old connection held as departed; once the mesh is deleted,
// every connection it used is held as deleted, with the UID it had, and
// Release closes them.
func (h *harness) testDeletedHeld(t *testing.T) {
	ns := h.namespace(t)
	m, _, mesh := h.followMember(t, ns, "repointed", member1)
	m.KeepFor(time.Minute)
	oldIdentity := m.Identities(mesh)["member"]

	h.putSecret(t, ns, "member", h.kubeconfig(member2, framework.UserAdmin))
	var newIdentity string
	framework.EventuallyT(t, 30*time.Second, "the entry on the new cluster, the old one held", func() error {
		newIdentity = m.Identities(mesh)["member"]
		held := m.Held(meshKey(mesh))
		if newIdentity == "" || newIdentity == oldIdentity || len(held) != 1 || held[0].State.Identity != oldIdentity {
			return fmt.Errorf("identity %q (was %q), held %+v", newIdentity, oldIdentity, held)
		}
		return nil
	})
	m.Forget(mesh)
	got := map[HoldKey]string{}
	for _, hd := range m.Held(meshKey(mesh)) {
		got[hd.Hold.Key] = hd.State.Identity
	}
	deleted := func(entry string) HoldKey {
		return HoldKey{Mesh: meshKey(mesh), UID: mesh.UID, Entry: entry, Why: HoldDeleted}
	}
	departed := HoldKey{Mesh: meshKey(mesh), UID: mesh.UID, Entry: "member", Why: HoldDeparted}
	if len(got) != 3 || got[deleted("member")] != newIdentity || got[departed] != oldIdentity {
		t.Fatalf("held after the deletion: %+v, want the host and member as deleted (identity %q) and the old member as departed (%q)", got, newIdentity, oldIdentity)
	}
	for k := range got {
		m.Release(k)
	}
	framework.EventuallyT(t, 10*time.Second, "every connection closed", func() error {
		if s := m.stats(); s.Clusters != 0 {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
}
