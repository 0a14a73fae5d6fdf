package reconciler

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// TestInstallationOwners: only the Peers this installation wrote name the
// meshes the sweep asks storage about, each mesh once: another
// installation's Peers, labelled alike but for the installation, Peers
// written before the label existed and hand-made Peers never are.
func TestInstallationOwners(t *testing.T) {
	const ours, theirs = "ns-uid-ours", "ns-uid-theirs"
	peer := func(name string, labels map[string]string, installation string) *kilov1alpha1.Peer {
		if installation != "" {
			labels[planner.LabelInstallation] = installation
		}
		return &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	peers := []*kilov1alpha1.Peer{
		peer("a", planner.ManagedLabels("ns", "m", "uid-1", "eu"), ours),
		peer("b", planner.ManagedLabels("ns", "m", "uid-1", "us"), ours),
		peer("c", planner.ManagedLabels("ns", "m", "uid-2", "eu"), ours),
		peer("other-installation", planner.ManagedLabels("ns2", "x", "uid-3", "eu"), theirs),
		peer("before-the-label", planner.ManagedLabels("ns3", "y", "uid-4", "eu"), ""),
		peer("hand-made", map[string]string{planner.LabelMeshUID: "uid-5", planner.LabelMeshNamespace: "ns", planner.LabelMeshName: "m"}, ours),
		peer("no-uid", planner.ManagedLabels("ns", "m", "", "eu"), ours),
	}
	got := installationOwners(chunklist.Sorted(peers, chunklist.ByName[*kilov1alpha1.Peer]), ours)
	want := []meshOwner{{"ns", "m", "uid-1"}, {"ns", "m", "uid-2"}}
	if !slices.Equal(got, want) {
		t.Errorf("owners %+v, want %+v", got, want)
	}
	if got := installationOwners(chunklist.Sorted(peers, chunklist.ByName[*kilov1alpha1.Peer]), "ns-uid-nobody"); len(got) != 0 {
		t.Errorf("owners of another installation: %+v", got)
	}
}
