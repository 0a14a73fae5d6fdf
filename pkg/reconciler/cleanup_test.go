package reconciler

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// TestOwnedBy: only objects with all of the mesh's labels, not being
// deleted already, are deleted; wherever they are.
func TestOwnedBy(t *testing.T) {
	mesh := testMesh()
	mesh.UID = "u1"
	own := planner.ManagedLabels(mesh.Namespace, mesh.Name, mesh.UID, "one")
	forged := map[string]string{planner.LabelMeshUID: string(mesh.UID), planner.LabelMeshNamespace: mesh.Namespace, planner.LabelMeshName: "other"}
	now := metav1.Now()
	for _, tt := range []struct {
		name string
		meta metav1.ObjectMeta
		want bool
	}{
		{name: "the mesh's", meta: metav1.ObjectMeta{Namespace: "shop", Name: "cart", Labels: own}, want: true},
		{name: "the mesh's, in any namespace", meta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "cart", Labels: own}, want: true},
		{name: "unlabelled", meta: metav1.ObjectMeta{Namespace: "shop", Name: "mine"}},
		{name: "another mesh's name with this UID", meta: metav1.ObjectMeta{Namespace: "shop", Name: "forged", Labels: forged}},
		{name: "another UID", meta: metav1.ObjectMeta{Namespace: "shop", Name: "old", Labels: planner.ManagedLabels(mesh.Namespace, mesh.Name, "u0", "one")}},
		{name: "being deleted already", meta: metav1.ObjectMeta{Namespace: "shop", Name: "going", Labels: own, DeletionTimestamp: &now}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownedBy(mesh, metav1.PartialObjectMetadata{ObjectMeta: tt.meta}); got != tt.want {
				t.Errorf("ownedBy = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNeverWritten: only a list the cluster refuses for want of the CRDs
// or of the right to list counts as clean; any other failure keeps the
// cluster's objects until it can be read.
func TestNeverWritten(t *testing.T) {
	gr := schema.GroupResource{Group: mcsv1beta1.GroupName, Resource: "serviceimports"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "CRDs not served", err: apierrors.NewNotFound(gr, ""), want: true},
		{name: "may not list", err: apierrors.NewForbidden(gr, "", errors.New("rbac")), want: true},
		{name: "unauthorized", err: apierrors.NewUnauthorized("expired")},
		{name: "timeout", err: apierrors.NewTimeoutError("slow", 1)},
		{name: "no answer", err: errors.New("connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := neverWritten(tt.err); got != tt.want {
				t.Errorf("neverWritten = %v, want %v", got, tt.want)
			}
		})
	}
}

// noServices stands for a services planner in a test that reads only
// whether there is one.
type noServices struct{}

func (noServices) Services(*meshv1alpha1.ClusterMesh) (*services.Output, error) { return nil, nil }

// TestMayHoldWritten: a member that cannot be acted on holds a deleted
// mesh's removal back only when it may hold something the mesh wrote.
func TestMayHoldWritten(t *testing.T) {
	mesh := testMesh()
	mesh.UID = "uid-1"
	ours := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: planner.ManagedLabels("ns", "m", "uid-1", "eu")}}
	earlier := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "q", Labels: planner.ManagedLabels("ns", "m", "uid-0", "eu")}}
	withApplied := func(n int32) *meshv1alpha1.ClusterMesh {
		m := mesh.DeepCopy()
		m.Status.Clusters = []meshv1alpha1.ClusterStatus{{Name: "us", PeersApplied: n}}
		return m
	}
	withServices := mesh.DeepCopy()
	withServices.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
	for _, c := range []struct {
		name string
		mesh *meshv1alpha1.ClusterMesh
		st   clusters.ClusterState
		want bool
	}{
		{"last known cache holds the mesh's Peers", mesh, clusters.ClusterState{Synced: true, Peers: planner.PeerListOf(ours, earlier)}, true},
		{"last known cache holds none of them", withApplied(3), clusters.ClusterState{Synced: true, Peers: planner.PeerListOf(earlier)}, false},
		{"never read, status says Peers were applied", withApplied(3), clusters.ClusterState{}, true},
		{"never read, nothing applied (a missing Secret)", withApplied(0), clusters.ClusterState{}, false},
		{"never read, no status", mesh, clusters.ClusterState{}, false},
		{"services read once, no Peer there", withServices, clusters.ClusterState{Services: &clusters.ServicesState{Since: metav1.Now().Time}}, true},
		{"services never read", withServices, clusters.ClusterState{Services: &clusters.ServicesState{}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Reconciler{services: noServices{}}
			if got := r.mayHoldWritten(c.mesh, clusters.Member{Entry: "us", State: c.st}); got != c.want {
				t.Errorf("mayHoldWritten = %v, want %v", got, c.want)
			}
		})
	}
}
