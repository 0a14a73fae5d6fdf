package services

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

const (
	// ManagedByValue is the endpointslice.kubernetes.io/managed-by of the
	// EndpointSlices an import holds: not the in-cluster controller's, so
	// it leaves them alone, and an exported Service's own slices are told
	// apart from them.
	ManagedByValue = "kilo-mesh-apiserver.mesh.kilo.squat.ai"
	// AnnotationDerivedService on a ClusterSetIP ServiceImport names its
	// derived Service, as the upstream reference implementation does.
	AnnotationDerivedService = "multicluster.kubernetes.io/derived-service"
	// AnnotationExportedLabels and AnnotationExportedAnnotations on a
	// ServiceImport list, comma-separated and sorted, the keys of the
	// export's exportedLabels and exportedAnnotations written there: a key
	// the export drops is removed, other writers' keys are never touched.
	AnnotationExportedLabels      = "mesh.kilo.squat.ai/exported-labels"
	AnnotationExportedAnnotations = "mesh.kilo.squat.ai/exported-annotations"

	derivedPrefix  = "derived-"
	derivedHashLen = 10
	sliceHashLen   = 10
)

var base32Hex = base32.HexEncoding.WithPadding(base32.NoPadding)

// DerivedServiceName is the name of the derived Service of the import of
// namespace/name: "derived-" and the first 10 characters of the lower-case
// unpadded base32hex of sha256("<namespace>/<name>"), the name the upstream
// reference controller and Cilium use.
func DerivedServiceName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return derivedPrefix + strings.ToLower(base32Hex.EncodeToString(sum[:]))[:derivedHashLen]
}

// sliceName names one EndpointSlice of an import: readable parts (the
// import's Service name and the source cluster), trimmed to fit, then a
// hash of everything that tells two slices of the cluster apart.
func sliceName(prefix, source string, key ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(append([]string{prefix, source}, key...), "\x00")))
	hash := strings.ToLower(base32Hex.EncodeToString(sum[:]))[:sliceHashLen]
	readable := prefix + "-" + source
	if max := validation.DNS1123SubdomainMaxLength - sliceHashLen - 1; len(readable) > max {
		readable = strings.TrimRight(readable[:max], "-.")
	}
	return readable + "-" + hash
}

// managedLabels are the labels of every object an import writes; those of
// an EndpointSlice add its source cluster and the MCS labels.
func (c *computation) managedLabels(source string) map[string]string {
	l := planner.ManagedLabels(c.in.MeshNamespace, c.in.MeshName, c.in.MeshUID, source)
	if source == "" {
		delete(l, planner.LabelSourceCluster)
	}
	if c.in.Installation != "" {
		l[planner.LabelInstallation] = c.in.Installation
	}
	return l
}

func (c *computation) sliceLabels(name, source, derived string) map[string]string {
	l := c.managedLabels(source)
	l[discoveryv1.LabelManagedBy] = ManagedByValue
	l[mcsv1beta1.LabelServiceName] = name
	l[mcsv1beta1.LabelSourceCluster] = source
	if derived != "" {
		// Only a ClusterSetIP import's slices name a Service: a headless
		// import's must not join the exported Service of the same name.
		l[discoveryv1.LabelServiceName] = derived
	}
	return l
}

func (c *computation) owned(labels map[string]string) bool {
	return planner.LabelsManagedBy(labels, c.in.MeshNamespace, c.in.MeshName, c.in.MeshUID)
}
