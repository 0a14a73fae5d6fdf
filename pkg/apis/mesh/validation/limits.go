package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Limits on the size of a mesh. A spec is written by a tenant; without
// limits one request could make every replica parse, compare and plan
// hundreds of thousands of networks, and every plan of every mesh sharing a
// cluster with it carry them. The values are far above what a real mesh
// declares (a cluster has a few pod, service and node networks), and are
// documented in docs/security.md.
const (
	// MaxClusters is the number of member clusters one mesh may list:
	// Cilium's ClusterMesh reaches 255, and a mesh of 250 is measured.
	MaxClusters = 256
	// MaxNetworksPerCluster is the number of CIDRs one cluster entry may
	// declare: podCIDRs, additionalCIDRs and nodeCIDRs together, with
	// wireguardCIDR and serviceCIDR.
	MaxNetworksPerCluster = 256
	// MaxNetworksPerMesh is the number of CIDRs one mesh may declare in all.
	MaxNetworksPerMesh = 2048
)

// validateLimits refuses a spec larger than the limits before anything of
// it is parsed: a spec over them is refused in microseconds, whatever it
// holds, with the fields that are too long.
func validateLimits(spec *meshv1alpha1.ClusterMeshSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	clustersPath := path.Child("clusters")
	if len(spec.Clusters) > MaxClusters {
		errs = append(errs, field.TooMany(clustersPath, len(spec.Clusters), MaxClusters))
	}
	total := 0
	for i := range spec.Clusters {
		c := &spec.Clusters[i]
		p := clustersPath.Index(i)
		n := networkCount(c)
		total += n
		if n <= MaxNetworksPerCluster {
			continue
		}
		// Name the list that is too long when one is; otherwise the entry.
		reported := false
		for _, l := range []struct {
			name string
			len  int
		}{{"podCIDRs", len(c.PodCIDRs)}, {"additionalCIDRs", len(c.AdditionalCIDRs)}, {"nodeCIDRs", len(c.NodeCIDRs)}} {
			if l.len > MaxNetworksPerCluster {
				errs = append(errs, field.TooMany(p.Child(l.name), l.len, MaxNetworksPerCluster))
				reported = true
			}
		}
		if !reported {
			errs = append(errs, field.Invalid(p, fmt.Sprintf("%d networks", n),
				fmt.Sprintf("a cluster may declare at most %d networks (podCIDRs, additionalCIDRs, nodeCIDRs, wireguardCIDR and serviceCIDR together)", MaxNetworksPerCluster)))
		}
	}
	if total > MaxNetworksPerMesh {
		errs = append(errs, field.Invalid(clustersPath, fmt.Sprintf("%d networks", total),
			fmt.Sprintf("a mesh may declare at most %d networks in all its clusters", MaxNetworksPerMesh)))
	}
	return errs
}

// networkCount is the number of CIDRs an entry declares.
func networkCount(c *meshv1alpha1.ClusterEntry) int {
	n := len(c.PodCIDRs) + len(c.AdditionalCIDRs) + len(c.NodeCIDRs)
	if c.WireguardCIDR != "" {
		n++
	}
	if c.ServiceCIDR != "" {
		n++
	}
	return n
}
