package migrate

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func oldPeer(name, source, key string) kilov1alpha1.Peer {
	labels := map[string]string{LabelPredecessorMesh: "my-mesh"}
	if source != "" {
		labels[LabelPredecessorSource] = source
	}
	return kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: kilov1alpha1.PeerSpec{PublicKey: key}}
}

func TestClassify(t *testing.T) {
	groupB := meshv1alpha1.GroupPlan{Name: "location:b", Leader: "node-b1", Members: []string{"node-b1", "node-b2"}, Ready: true, PeerName: "my-mesh-cluster-b-location-b-x"}
	sources := map[string]*SourceKeys{
		"cluster-a": {},
		"cluster-b": {
			Cluster:  &meshv1alpha1.ClusterPlan{Name: "cluster-b", Reachable: true, Groups: []meshv1alpha1.GroupPlan{groupB}},
			NodeKeys: map[string]string{"node-b1": "KB1", "node-b2": "KB2", "node-b3": "KB3"},
		},
		// Unreachable now: nothing is known of its groups.
		"cluster-c": {},
	}
	peers := map[string][]kilov1alpha1.Peer{
		"cluster-a": {
			// The anchor sorts before the leader's own Peer: the leader's
			// must still be the one adopted.
			oldPeer("my-mesh--cluster-b--anchor", "cluster-b", "KB1"),
			oldPeer("my-mesh--cluster-b--node-b1", "cluster-b", "KB1"),
			oldPeer("my-mesh--cluster-b--node-b2", "cluster-b", "KB2"),
			oldPeer("my-mesh--cluster-b--node-b3", "cluster-b", "KB3"),
			oldPeer("my-mesh--cluster-b--gone", "cluster-b", "KGONE"),
			oldPeer("my-mesh--cluster-c--node-c1", "cluster-c", "KC1"),
			oldPeer("my-mesh--cluster-z--node-z1", "cluster-z", "KZ1"),
			oldPeer("unlabelled", "", "KU"),
		},
	}
	want := map[string]struct {
		action Action
		reason string
	}{
		"my-mesh--cluster-b--anchor":  {ActionRemove, "like my-mesh--cluster-b--node-b1"},
		"my-mesh--cluster-b--node-b1": {ActionAdopt, "replaced by Peer my-mesh-cluster-b-location-b-x"},
		"my-mesh--cluster-b--node-b2": {ActionRemove, "per-node Peer of node-b2, a member of location:b"},
		"my-mesh--cluster-b--node-b3": {ActionRemove, "which no exported group holds"},
		"my-mesh--cluster-b--gone":    {ActionRemove, "no node of cluster-b has its key"},
		"my-mesh--cluster-c--node-c1": {ActionLeave, "cannot be read now"},
		"my-mesh--cluster-z--node-z1": {ActionLeave, "not a member of the mesh"},
		"unlabelled":                  {ActionLeave, "no kilo-clustermesh.io/source-cluster label"},
	}
	fates := Classify(peers, sources)
	if len(fates) != len(want) {
		t.Fatalf("%d fates, want %d", len(fates), len(want))
	}
	for _, f := range fates {
		w := want[f.Peer.Name]
		if f.Target != "cluster-a" || f.Action != w.action || !strings.Contains(f.Reason, w.reason) {
			t.Errorf("%s: %s on %s (%s), want %s with %q", f.Peer.Name, f.Action, f.Target, f.Reason, w.action, w.reason)
		}
	}
}

func TestParseMemberFlags(t *testing.T) {
	got, err := parseMemberFlags([]string{"b=/tmp/b.yaml", "c=/tmp/all.yaml:ctx-c"})
	if err != nil {
		t.Fatal(err)
	}
	if got["b"] != [2]string{"/tmp/b.yaml", ""} || got["c"] != [2]string{"/tmp/all.yaml", "ctx-c"} {
		t.Errorf("parsed %v", got)
	}
	for _, bad := range []string{"b", "=x", "b="} {
		if _, err := parseMemberFlags([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
