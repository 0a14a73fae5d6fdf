package planner

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// PeerListFormat is how RenderPeerList encodes the list.
type PeerListFormat int

const (
	// PeerListJSON is indented JSON, what `kubectl get --raw` asks for.
	PeerListJSON PeerListFormat = iota
	// PeerListYAML is YAML.
	PeerListYAML
)

// RenderPeerList renders the desired Peers of one cluster as a v1 List
// that `kubectl apply -f -` takes as it is, in either encoding: apiVersion
// and kind on every item, no status, resourceVersion, uid or other
// server-set fields. A v1 List rather than a PeerList, because kubectl
// flattens it without needing the Peer CRD's list type.
func RenderPeerList(p *Plan, cluster string, format PeerListFormat) ([]byte, error) {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{}}
	for _, desired := range p.DesiredPeers[cluster].All() {
		// Only the fields kubectl apply should send; the maps and lists
		// stay shared with the plan, which the encoder only reads.
		peer := &kilov1alpha1.Peer{
			TypeMeta: peerTypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name:        desired.Name,
				Labels:      desired.Labels,
				Annotations: desired.Annotations,
			},
			Spec: desired.Spec,
		}
		list.Items = append(list.Items, runtime.RawExtension{Object: peer})
	}
	opts := json.SerializerOptions{Yaml: format == PeerListYAML, Pretty: format == PeerListJSON}
	var buf bytes.Buffer
	if err := json.NewSerializerWithOptions(json.DefaultMetaFactory, nil, nil, opts).Encode(list, &buf); err != nil {
		return nil, fmt.Errorf("rendering the Peers of cluster %s: %w", cluster, err)
	}
	return buf.Bytes(), nil
}
