package planner

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// keptCopy is an existing Peer reduced to what the planner manages, so that
// applying it changes nothing and takes no ownership of others' fields.
func keptCopy(p *kilov1alpha1.Peer) kilov1alpha1.Peer {
	return kilov1alpha1.Peer{
		TypeMeta: peerTypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.Name,
			Labels:      pick(p.Labels, managedLabelKeys),
			Annotations: pick(p.Annotations, managedAnnotationKeys),
		},
		Spec: *p.Spec.DeepCopy(),
	}
}

var (
	managedLabelKeys      = []string{LabelManagedBy, LabelMeshNamespace, LabelMeshName, LabelMeshUID, LabelSourceCluster, LabelInstallation}
	managedAnnotationKeys = []string{AnnotationSourceGroup, AnnotationSourceLeader, AnnotationRelays}
)

func pick(m map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}
