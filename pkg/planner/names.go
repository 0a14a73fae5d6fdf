package planner

import (
	"crypto/sha256"
	"encoding/base32"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// Labels on every Peer the planner produces. Only Peers whose mesh-uid label
// equals the mesh's UID (and whose namespace and name labels match) are ever
// updated or deleted: a label selector is what the reconciler lists with.
const (
	LabelManagedBy     = "app.kubernetes.io/managed-by"
	LabelMeshNamespace = "mesh.kilo.squat.ai/mesh-namespace"
	LabelMeshName      = "mesh.kilo.squat.ai/mesh-name"
	LabelMeshUID       = "mesh.kilo.squat.ai/mesh-uid"
	LabelSourceCluster = "mesh.kilo.squat.ai/source-cluster"
	// LabelInstallation names the installation of the server that wrote
	// the Peer (Input.Installation): another installation sharing a member
	// cluster labels its Peers alike but for this one, and a Peer of this
	// installation whose mesh its storage does not hold is an orphan.
	LabelInstallation = "mesh.kilo.squat.ai/installation"

	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "kilo-mesh-apiserver"
)

// Annotations on every Peer the planner produces. Group names contain a colon,
// which label values may not, so they are annotations; renderers use them.
const (
	AnnotationSourceGroup  = "mesh.kilo.squat.ai/source-group"
	AnnotationSourceLeader = "mesh.kilo.squat.ai/source-leader"
	// AnnotationRelays lists, comma-separated, the clusters behind NAT
	// whose networks a relay group's Peer also carries on a cluster behind
	// NAT; only that Peer has it.
	AnnotationRelays = "mesh.kilo.squat.ai/relays"
)

// peerNameHashLen is the number of base32 characters of the name hash:
// 50 bits, so two of one mesh's groups colliding is not a practical concern.
const peerNameHashLen = 10

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// PeerName is the name of the Peer that represents one group of a source
// cluster. It is a DNS-1123 subdomain of at most 253 characters; the
// readable part may be truncated, the hash of all four inputs never is, so
// two meshes of the same name in different namespaces never collide.
func PeerName(meshNamespace, meshName, sourceCluster, group string) string {
	var stack [256]byte
	return string(appendPeerName(stack[:0], meshNamespace, meshName, sourceCluster, group))
}

// appendPeerName appends PeerName's result to b.
func appendPeerName(b []byte, meshNamespace, meshName, sourceCluster, group string) []byte {
	var stack [256]byte
	in := stack[:0]
	for _, s := range []string{meshNamespace, meshName, sourceCluster, group} {
		in = append(append(in, s...), 0)
	}
	digest := sha256.Sum256(in)
	var sum [16]byte // 10 bytes of digest encode to exactly 16 characters
	lowerBase32.Encode(sum[:], digest[:10])

	start := len(b)
	b = appendSanitized(b, meshName, sourceCluster, group)
	if max := validation.DNS1123SubdomainMaxLength - peerNameHashLen - 1; len(b)-start > max {
		b = trimDashes(b[:start+max], start)
	}
	if len(b) > start {
		b = append(b, '-')
	}
	return append(b, sum[:peerNameHashLen]...)
}

// appendSanitized appends the parts, joined by dashes, mapped onto
// [a-z0-9-] without leading, trailing or repeated dashes. Dots are mapped
// too: a location name like "a..b" would otherwise make an invalid subdomain.
func appendSanitized(b []byte, parts ...string) []byte {
	start := len(b)
	dash := true // suppresses a leading dash
	for k, s := range parts {
		if k > 0 && !dash {
			b = append(b, '-')
			dash = true
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
				b = append(b, c)
				dash = false
			case c >= 'A' && c <= 'Z':
				b = append(b, c+('a'-'A'))
				dash = false
			default:
				if !dash {
					b = append(b, '-')
					dash = true
				}
			}
		}
	}
	return trimDashes(b, start)
}

// trimDashes removes the dashes that end b, not reaching before start.
func trimDashes(b []byte, start int) []byte {
	for len(b) > start && b[len(b)-1] == '-' {
		b = b[:len(b)-1]
	}
	return b
}

// ManagedLabels are the labels identifying a Peer of sourceCluster managed by
// the mesh. The reconciler can select a mesh's Peers with the first four.
func ManagedLabels(meshNamespace, meshName string, meshUID types.UID, sourceCluster string) map[string]string {
	return map[string]string{
		LabelManagedBy:     ManagedByValue,
		LabelMeshNamespace: meshNamespace,
		LabelMeshName:      meshName,
		LabelMeshUID:       string(meshUID),
		LabelSourceCluster: sourceCluster,
	}
}

// IsManagedBy reports whether the mesh owns p: its mesh-uid label equals the
// mesh UID and its namespace and name labels match. A Peer left by an earlier
// mesh of the same name has another UID and is not owned.
func IsManagedBy(p *kilov1alpha1.Peer, meshNamespace, meshName string, meshUID types.UID) bool {
	return LabelsManagedBy(p.Labels, meshNamespace, meshName, meshUID)
}

// LabelsManagedBy is IsManagedBy for the labels of any object the mesh
// writes (Peers, and the ServiceImports, Services and EndpointSlices of
// multi-cluster services).
func LabelsManagedBy(l map[string]string, meshNamespace, meshName string, meshUID types.UID) bool {
	return meshUID != "" &&
		l[LabelMeshUID] == string(meshUID) &&
		l[LabelMeshNamespace] == meshNamespace &&
		l[LabelMeshName] == meshName
}
