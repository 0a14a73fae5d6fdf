package v1alpha1

// SetDefaults fills in the optional fields of a mesh whose defaults are
// meaningful to users (they see them in kubectl get -o yaml). The strategy
// calls it before validation so what is validated is what is stored.
func SetDefaults(m *ClusterMesh) {
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
