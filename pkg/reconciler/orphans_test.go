package reconciler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestOrphanCandidates: only Peers of meshes this replica saw deleted are
// looked at, by namespace, name and UID together, on synced connections:
// another installation's Peers, labelled alike, never are.
func TestOrphanCandidates(t *testing.T) {
	peer := func(name string, labels map[string]string) *kilov1alpha1.Peer {
		return &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	gone := map[types.UID]goneMesh{"uid-gone": {namespace: "ns", name: "m", at: time.Now()}}
	peers := []*kilov1alpha1.Peer{
		peer("a", planner.ManagedLabels("ns", "m", "uid-gone", "eu")),
		peer("b", planner.ManagedLabels("ns", "m", "uid-gone", "us")),
		peer("other-installation", planner.ManagedLabels("ns2", "x", "uid-never-seen", "eu")),
		peer("same-uid-other-name", planner.ManagedLabels("ns", "renamed", "uid-gone", "eu")),
		peer("hand-made", map[string]string{planner.LabelMeshUID: "uid-gone", planner.LabelMeshNamespace: "ns", planner.LabelMeshName: "m"}),
	}
	got := orphanCandidates([]clusters.Connection{
		{Name: "synced", Synced: true, Peers: peers},
		{Name: "not synced", Peers: peers},
	}, gone)
	want := peerOwner{"ns", "m", "uid-gone"}
	if len(got) != 1 || len(got[want]) != 1 || got[want][0].Name != "synced" {
		t.Errorf("candidates %+v, want the synced connection for %+v only", got, want)
	}
	if len(orphanCandidates([]clusters.Connection{{Name: "synced", Synced: true, Peers: peers}}, nil)) != 0 {
		t.Error("candidates without a mesh seen deleted")
	}
}
