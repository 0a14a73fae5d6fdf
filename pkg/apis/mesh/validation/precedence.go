package validation

import (
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Precedes reports whether mesh a keeps what it claims against mesh b on a
// cluster both use: it was created first, or at the same second with the
// lower UID. A mesh not stored yet (no creation time) comes after every
// stored one. Admission and the plan cache both decide by it, so that a
// later mesh can neither take an earlier one's networks nor block its
// updates.
func Precedes(a, b *meshv1alpha1.ClusterMesh) bool {
	switch {
	case a.CreationTimestamp.IsZero() != b.CreationTimestamp.IsZero():
		return b.CreationTimestamp.IsZero()
	case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return strings.Compare(string(a.UID), string(b.UID)) < 0
}
