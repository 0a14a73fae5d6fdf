// Package validation holds the rules a ClusterMesh must satisfy before it is
// stored. Every rule reports its field path, and all errors are returned at
// once so a user fixes a manifest in one round.
package validation

import (
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// MinClusters is how few clusters a mesh may have: a mesh joins clusters.
const MinClusters = 2

const (
	maxPort      = 65535
	maxKeepalive = 65535
)

var validMultiClusterServices = sets.New(
	meshv1alpha1.MultiClusterServicesEnabled,
	meshv1alpha1.MultiClusterServicesDisabled,
)

var validGranularities = sets.New(
	meshv1alpha1.GranularityAuto,
	meshv1alpha1.GranularityLocation,
	meshv1alpha1.GranularityFull,
	meshv1alpha1.GranularityCross,
)

// ValidateClusterMesh validates a mesh on create. Mesh names are DNS-1123
// labels because they are carried in label values of every Peer.
func ValidateClusterMesh(m *meshv1alpha1.ClusterMesh) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&m.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, ValidateClusterMeshSpec(&m.Spec, field.NewPath("spec"))...)
}

// ValidateClusterMeshUpdate validates a mesh on update.
func ValidateClusterMeshUpdate(m, old *meshv1alpha1.ClusterMesh) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&m.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateClusterMeshSpec(&m.Spec, field.NewPath("spec"))...)
}

// ValidateClusterMeshStatusUpdate validates a write to the status subresource.
func ValidateClusterMeshStatusUpdate(m, old *meshv1alpha1.ClusterMesh) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&m.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	errs = append(errs, metav1validation.ValidateConditions(m.Status.Conditions, statusPath.Child("conditions"))...)
	if m.Status.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("observedGeneration"), m.Status.ObservedGeneration, "must not be negative"))
	}
	return errs
}

// ValidateClusterMeshSpec checks every cluster entry and that no two networks
// of the mesh overlap: an overlap would let one cluster capture another's traffic.
// A spec over the size limits is refused with those errors alone, before
// any of it is parsed.
func ValidateClusterMeshSpec(spec *meshv1alpha1.ClusterMeshSpec, path *field.Path) field.ErrorList {
	if errs := validateLimits(spec, path); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	clustersPath := path.Child("clusters")
	if len(spec.Clusters) < MinClusters {
		errs = append(errs, field.Invalid(clustersPath, len(spec.Clusters), fmt.Sprintf("a mesh needs at least %d clusters", MinClusters)))
	}
	names := sets.New[string]()
	// A mesh without a local cluster joins the tenant's own clusters and
	// asks nothing of the host; one with a local cluster needs host access.
	locals := 0
	var networks []Network
	for i := range spec.Clusters {
		c := &spec.Clusters[i]
		p := clustersPath.Index(i)
		errs = append(errs, validateClusterEntry(c, p)...)
		if c.Name != "" {
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
		if c.Local {
			locals++
			if locals > 1 {
				errs = append(errs, field.Invalid(p.Child("local"), true, "at most one cluster may be local"))
			}
		}
		nets, netErrs := ClusterNetworks(c, p)
		networks = append(networks, nets...)
		errs = append(errs, netErrs...)
	}
	errs = append(errs, validateRelayCluster(spec, path.Child("relayCluster"))...)
	if !validMultiClusterServices.Has(spec.MultiClusterServices) {
		errs = append(errs, field.NotSupported(path.Child("multiClusterServices"), spec.MultiClusterServices, sets.List(validMultiClusterServices)))
	}
	return append(errs, validateNoOverlap(networks)...)
}

// validateRelayCluster checks that the relay is a member that others can
// dial: a relay behind NAT could not be reached by the spokes either.
func validateRelayCluster(spec *meshv1alpha1.ClusterMeshSpec, p *field.Path) field.ErrorList {
	if spec.RelayCluster == "" {
		return nil
	}
	for i := range spec.Clusters {
		if c := &spec.Clusters[i]; c.Name == spec.RelayCluster {
			if c.BehindNAT {
				return field.ErrorList{field.Invalid(p, spec.RelayCluster,
					fmt.Sprintf("the relay cluster must be one the others can dial, but spec.clusters[%d].behindNAT is true", i))}
			}
			return nil
		}
	}
	return field.ErrorList{field.Invalid(p, spec.RelayCluster, "must be the name of one of spec.clusters")}
}

func validateClusterEntry(c *meshv1alpha1.ClusterEntry, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
		}
	}
	errs = append(errs, validateSecretRef(c, p.Child("kubeconfigSecretRef"))...)
	if len(c.PodCIDRs) == 0 {
		errs = append(errs, field.Required(p.Child("podCIDRs"), "at least one pod CIDR"))
	}
	if c.WireguardCIDR == "" {
		errs = append(errs, field.Required(p.Child("wireguardCIDR"), "the cluster's Kilo --subnet"))
	}
	if c.WireguardPort < 1 || c.WireguardPort > maxPort {
		errs = append(errs, field.Invalid(p.Child("wireguardPort"), c.WireguardPort, fmt.Sprintf("must be between 1 and %d", maxPort)))
	}
	if c.PersistentKeepalive < 0 || c.PersistentKeepalive > maxKeepalive {
		errs = append(errs, field.Invalid(p.Child("persistentKeepalive"), c.PersistentKeepalive, fmt.Sprintf("must be between 0 and %d seconds", maxKeepalive)))
	}
	if !validGranularities.Has(c.Granularity) {
		errs = append(errs, field.NotSupported(p.Child("granularity"), c.Granularity, sets.List(validGranularities)))
	}
	for _, msg := range validation.IsQualifiedName(c.TopologyLabel) {
		errs = append(errs, field.Invalid(p.Child("topologyLabel"), c.TopologyLabel, msg))
	}
	return errs
}

// validateSecretRef enforces that only remote clusters carry credentials: the
// local cluster is always reached with the server's own identity.
func validateSecretRef(c *meshv1alpha1.ClusterEntry, p *field.Path) field.ErrorList {
	ref := c.KubeconfigSecretRef
	switch {
	case c.Local && ref != nil:
		return field.ErrorList{field.Forbidden(p, "the local cluster is reached with the server's own credentials")}
	case c.Local:
		return nil
	case ref == nil:
		return field.ErrorList{field.Required(p, "a cluster that is not local needs a kubeconfig Secret")}
	}
	var errs field.ErrorList
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	for _, msg := range validation.IsConfigMapKey(ref.Key) {
		errs = append(errs, field.Invalid(p.Child("key"), ref.Key, msg))
	}
	return errs
}
