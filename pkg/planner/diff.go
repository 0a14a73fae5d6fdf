package planner

import (
	"slices"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// diff compares the desired Peers of a target with the managed Peers it
// holds. Kept Peers are neither updated nor deleted; Peers the mesh does not
// manage are never touched.
func diff(tp *meshv1alpha1.TargetPlan, desired []kilov1alpha1.Peer, kept map[string]bool, x *existingPeers) {
	want := make(map[string]struct{}, len(desired))
	for i := range desired {
		d := &desired[i]
		want[d.Name] = struct{}{}
		if kept[d.Name] {
			continue
		}
		have := x.managedByName[d.Name]
		switch {
		case have == nil:
			tp.Create = append(tp.Create, d.Name)
		default:
			if fields := changedFields(d, have); len(fields) > 0 {
				tp.Update = append(tp.Update, meshv1alpha1.PeerUpdate{Name: d.Name, Fields: fields})
			} else {
				tp.Unchanged = append(tp.Unchanged, d.Name)
			}
		}
	}
	for _, m := range x.managed {
		if _, ok := want[m.Name]; !ok && !kept[m.Name] {
			tp.Delete = append(tp.Delete, m.Name)
		}
	}
}

// changedFields lists the paths of the managed fields that differ. The
// preshared key is not managed: a user may set one on both sides.
func changedFields(want, have *kilov1alpha1.Peer) []string {
	var f []string
	for _, k := range managedLabelKeys {
		if want.Labels[k] != have.Labels[k] {
			f = append(f, "metadata.labels")
			break
		}
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
