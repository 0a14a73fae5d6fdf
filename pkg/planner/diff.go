package planner

import (
	"slices"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// diff compares the desired Peers of a target with the managed Peers it
// holds, both sorted by name, in one merge pass. Kept Peers are neither
// updated nor deleted; Peers the mesh does not manage are never touched.
// The Peers held as planned are listed only in the served view (see
// Plan.unchanged): keeping that list cost a change more than planning it.
func diff(tp *meshv1alpha1.TargetPlan, desired []*kilov1alpha1.Peer, kept map[string]bool, managed []*kilov1alpha1.Peer) {
	// Size for a first plan, which creates everything.
	if len(managed) == 0 {
		tp.Create = make([]string, 0, len(desired))
	}
	i, j := 0, 0
	for i < len(desired) || j < len(managed) {
		switch c := headOrder(desired, i, managed, j); {
		case c < 0: // desired only
			if !kept[desired[i].Name] {
				tp.Create = append(tp.Create, desired[i].Name)
			}
			i++
		case c > 0: // held only
			if !kept[managed[j].Name] {
				tp.Delete = append(tp.Delete, managed[j].Name)
			}
			j++
		default:
			switch d := desired[i]; {
			case kept[d.Name]:
			default:
				if fields := changedFields(d, managed[j]); len(fields) > 0 {
					tp.Update = append(tp.Update, meshv1alpha1.PeerUpdate{Name: d.Name, Fields: fields})
				}
			}
			i++
			j++
		}
	}
}

// headOrder orders the heads (at i and j) of two lists of Peers sorted by
// name in a merge: -1 when a's comes first or b is done, 1 when b's comes
// first or a is done, 0 for one name.
func headOrder(a []*kilov1alpha1.Peer, i int, b []*kilov1alpha1.Peer, j int) int {
	switch {
	case i == len(a):
		return 1
	case j == len(b):
		return -1
	}
	return strings.Compare(a[i].Name, b[j].Name)
}

// changedFields lists the paths of the managed fields that differ; have is
// a Peer the mesh manages. That it matched the mesh's namespace, name and
// UID labels is what makes it managed, so of the labels only the source
// cluster, managed-by and the installation can differ (a Peer written
// before Peers carried the installation gets it at the next pass). The
// preshared key is not managed: a user may set one on both sides.
func changedFields(want, have *kilov1alpha1.Peer) []string {
	var f []string
	if want.Labels[LabelSourceCluster] != have.Labels[LabelSourceCluster] || want.Labels[LabelManagedBy] != have.Labels[LabelManagedBy] ||
		want.Labels[LabelInstallation] != have.Labels[LabelInstallation] {
		f = append(f, "metadata.labels")
	}
	for _, k := range managedAnnotationKeys {
		if want.Annotations[k] != have.Annotations[k] {
			f = append(f, "metadata.annotations")
			break
		}
	}
	if !slices.Equal(want.Spec.AllowedIPs, have.Spec.AllowedIPs) {
		f = append(f, "spec.allowedIPs")
	}
	if !equalEndpoint(want.Spec.Endpoint, have.Spec.Endpoint) {
		f = append(f, "spec.endpoint")
	}
	if want.Spec.PersistentKeepalive != have.Spec.PersistentKeepalive {
		f = append(f, "spec.persistentKeepalive")
	}
	if want.Spec.PublicKey != have.Spec.PublicKey {
		f = append(f, "spec.publicKey")
	}
	return f
}

func equalEndpoint(a, b *kilov1alpha1.PeerEndpoint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
