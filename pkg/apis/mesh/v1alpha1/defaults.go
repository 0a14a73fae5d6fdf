package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

func init() {
	// Defaulting on decode means objects stored before a default existed read
	// back with it, so comparing old and new specs never sees a phantom change.
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddTypeDefaultingFunc(&ClusterMesh{}, func(obj interface{}) { SetDefaults(obj.(*ClusterMesh)) })
		return nil
	})
}

// SetDefaults fills in the optional fields of a mesh whose defaults are
// meaningful to users (they see them in kubectl get -o yaml).
func SetDefaults(m *ClusterMesh) {
	if m.Spec.MultiClusterServices == "" {
		m.Spec.MultiClusterServices = MultiClusterServicesDisabled
	}
	for i := range m.Spec.Clusters {
		c := &m.Spec.Clusters[i]
		if c.WireguardPort == 0 {
			c.WireguardPort = DefaultWireguardPort
		}
		if c.Granularity == "" {
			c.Granularity = GranularityAuto
		}
		if c.TopologyLabel == "" {
			c.TopologyLabel = DefaultTopologyLabel
		}
		if c.KubeconfigSecretRef != nil && c.KubeconfigSecretRef.Key == "" {
			c.KubeconfigSecretRef.Key = DefaultKubeconfigKey
		}
	}
}
