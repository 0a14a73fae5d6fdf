// Package migrate is `kubectl mesh import`: it turns a ClusterMesh of the
// predecessor kilo-clustermesh-operator (kilo.squat.ai/v1alpha1) into a
// mesh.kilo.squat.ai ClusterMesh, and with --adopt hands the Peers that
// operator wrote over to kilo-mesh-apiserver without cutting traffic.
package migrate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// What the predecessor operator writes: its ClusterMesh kind (the group is
// Kilo's own), the labels on the Peers it manages, its finalizer and the
// name of its leader-election Lease in its namespace.
const (
	PredecessorGroup   = "kilo.squat.ai"
	PredecessorVersion = "v1alpha1"
	PredecessorKind    = "ClusterMesh"

	LabelPredecessorMesh   = "kilo-clustermesh.io/mesh"
	LabelPredecessorSource = "kilo-clustermesh.io/source-cluster"

	PredecessorFinalizer = "kilo-clustermesh.io/cleanup"
	PredecessorLease     = "f27237f1.squat.ai"
)

// PredecessorResource is the predecessor's ClusterMesh resource.
var PredecessorResource = schema.GroupVersionResource{Group: PredecessorGroup, Version: PredecessorVersion, Resource: "clustermeshes"}

// PredecessorMesh is the predecessor's ClusterMesh, in both of its forms:
// typed fields, or one flat allowedNetworks list per cluster.
type PredecessorMesh struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PredecessorSpec `json:"spec"`
	// Status is what that operator observed; import does not need it.
	Status map[string]any `json:"status,omitempty"`
}

// PredecessorSpec lists the clusters of a predecessor mesh.
type PredecessorSpec struct {
	Clusters []PredecessorEntry `json:"clusters"`
}

// PredecessorEntry is one cluster of a predecessor mesh.
type PredecessorEntry struct {
	Name                string                `json:"name"`
	Local               bool                  `json:"local,omitempty"`
	KubeconfigSecretRef *PredecessorSecretRef `json:"kubeconfigSecretRef,omitempty"`
	PodCIDRs            []string              `json:"podCIDRs,omitempty"`
	WireguardCIDR       string                `json:"wireguardCIDR,omitempty"`
	WireguardPort       int32                 `json:"wireguardPort,omitempty"`
	ServiceCIDR         string                `json:"serviceCIDR,omitempty"`
	AdditionalCIDRs     []string              `json:"additionalCIDRs,omitempty"`
	PersistentKeepalive int32                 `json:"persistentKeepalive,omitempty"`
	AllowedNetworks     []string              `json:"allowedNetworks,omitempty"`
}

// PredecessorSecretRef names the kubeconfig Secret of a cluster.
type PredecessorSecretRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// ReadPredecessorMeshes returns the predecessor ClusterMeshes of a
// multi-document YAML or JSON file; other documents (the Peers of a dump,
// for instance) are counted in skipped.
func ReadPredecessorMeshes(r io.Reader) (meshes []PredecessorMesh, skipped int, err error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading the file: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, 0, fmt.Errorf("a document is not YAML: %w", err)
		}
		gv, _ := schema.ParseGroupVersion(tm.APIVersion)
		if tm.Kind != PredecessorKind || gv.Group != PredecessorGroup {
			skipped++
			continue
		}
		var m PredecessorMesh
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return nil, 0, fmt.Errorf("ClusterMesh of %s: %w", PredecessorGroup, err)
		}
		meshes = append(meshes, m)
	}
	return meshes, skipped, nil
}
