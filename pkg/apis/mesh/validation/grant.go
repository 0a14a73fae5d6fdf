package validation

import (
	"fmt"
	"net/netip"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// ValidateClusterMeshGrant validates a grant on create. Grant names are only
// ever shown, never carried in labels, so any DNS-1123 subdomain will do.
func ValidateClusterMeshGrant(g *meshv1alpha1.ClusterMeshGrant) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&g.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateGrantSpec(&g.Spec, field.NewPath("spec"))...)
}

// ValidateClusterMeshGrantUpdate validates a grant on update.
func ValidateClusterMeshGrantUpdate(g, old *meshv1alpha1.ClusterMeshGrant) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&g.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateGrantSpec(&g.Spec, field.NewPath("spec"))...)
}

// validateGrantSpec insists that a grant covers something and that its
// networks are spelled as the meshes' are (canonical, no default route), so
// that admins widen access one explicit network at a time.
func validateGrantSpec(spec *meshv1alpha1.ClusterMeshGrantSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Namespaces) == 0 && spec.NamespaceSelector == nil {
		errs = append(errs, field.Required(path, "namespaces or namespaceSelector: a grant must cover some namespace"))
	}
	errs = append(errs, validateNamespaceNames(spec.Namespaces, path.Child("namespaces"))...)
	errs = append(errs, validateNamespaceNames(spec.ServiceNamespaces, path.Child("serviceNamespaces"))...)
	if spec.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.NamespaceSelector,
			metav1validation.LabelSelectorValidationOptions{}, path.Child("namespaceSelector"))...)
	}
	for _, list := range []struct {
		name  string
		cidrs []string
	}{
		{"memberNetworks", spec.MemberNetworks},
		{"localNetworks", spec.LocalNetworks},
		{"memberServers", spec.MemberServers},
	} {
		_, listErrs := ParseCIDRList(list.cidrs, path.Child(list.name))
		errs = append(errs, listErrs...)
	}
	for _, limit := range []struct {
		name  string
		value *int32
		max   int32
	}{
		{"maxHostPeers", spec.MaxHostPeers, meshv1alpha1.MaxHostPeersLimit},
		{"maxHostPeerKiB", spec.MaxHostPeerKiB, meshv1alpha1.MaxHostPeerKiBLimit},
	} {
		if limit.value != nil && (*limit.value < 1 || *limit.value > limit.max) {
			errs = append(errs, field.Invalid(path.Child(limit.name), *limit.value, fmt.Sprintf("must be from 1 to %d", limit.max)))
		}
	}
	return errs
}

// validateNamespaceNames refuses a name no namespace can have, and duplicates.
func validateNamespaceNames(names []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, ns := range names {
		p := path.Index(i)
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(p, ns, msg))
		}
		if seen.Has(ns) {
			errs = append(errs, field.Duplicate(p, ns))
		}
		seen.Insert(ns)
	}
	return errs
}

// ParseCIDRList parses a list of canonical CIDRs, reporting each bad one at
// its index under path. Admission and the plan cache read grants with it,
// skipping what validation would refuse.
func ParseCIDRList(cidrs []string, path *field.Path) ([]netip.Prefix, field.ErrorList) {
	var (
		out  []netip.Prefix
		errs field.ErrorList
	)
	for i, s := range cidrs {
		p, err := ParseCIDR(s)
		if err != nil {
			errs = append(errs, field.Invalid(path.Index(i), s, err.Error()))
			continue
		}
		out = append(out, p)
	}
	return out, errs
}
