// Package grants answers which ClusterMeshGrants cover a namespace and what
// they let its meshes route through the cluster this server runs in (the
// host). Admission, the plan cache and the member clients' server policy
// all ask it, so that one rule decides everywhere.
package grants

import (
	"fmt"
	"net/netip"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// Coverage is what the grants covering one namespace allow together:
// several grants add up.
type Coverage struct {
	// Namespace is the namespace covered.
	Namespace string
	// Grants names the covering grants, sorted; empty when none covers it.
	Grants []string
	// MemberNetworks, LocalNetworks and MemberServers are the union of the
	// covering grants' lists.
	MemberNetworks []netip.Prefix
	LocalNetworks  []netip.Prefix
	MemberServers  []netip.Prefix
	// MaxHostPeers and MaxHostPeerBytes bound the Peers one mesh of the
	// namespace puts on the host: the largest of the covering grants'
	// values, each grant without one counting with the default.
	MaxHostPeers     int
	MaxHostPeerBytes int64
	// ServiceNamespaces are the host namespaces the covering grants let
	// the namespace's meshes export from and import into, sorted, unique.
	ServiceNamespaces []string
}

// Covered reports whether any grant covers the namespace.
func (c *Coverage) Covered() bool { return len(c.Grants) > 0 }

// Covers reports whether g covers a namespace with these labels: by name,
// or by its selector. A selector that does not parse covers nothing
// (validation refuses it; a stored one can only come from an older rule).
func Covers(g *meshv1alpha1.ClusterMeshGrant, namespace string, nsLabels map[string]string) bool {
	if slices.Contains(g.Spec.Namespaces, namespace) {
		return true
	}
	if g.Spec.NamespaceSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(g.Spec.NamespaceSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(nsLabels))
}

// Evaluate is the coverage of one namespace by grants. Networks a grant
// spells wrongly are skipped: they can only narrow what is allowed.
func Evaluate(grants []*meshv1alpha1.ClusterMeshGrant, namespace string, nsLabels map[string]string) Coverage {
	c := Coverage{Namespace: namespace}
	for _, g := range grants {
		if !Covers(g, namespace, nsLabels) {
			continue
		}
		c.Grants = append(c.Grants, g.Name)
		member, _ := validation.ParseCIDRList(g.Spec.MemberNetworks, field.NewPath("memberNetworks"))
		local, _ := validation.ParseCIDRList(g.Spec.LocalNetworks, field.NewPath("localNetworks"))
		servers, _ := validation.ParseCIDRList(g.Spec.MemberServers, field.NewPath("memberServers"))
		c.MemberNetworks = append(c.MemberNetworks, member...)
		c.LocalNetworks = append(c.LocalNetworks, local...)
		c.MemberServers = append(c.MemberServers, servers...)
		c.ServiceNamespaces = append(c.ServiceNamespaces, g.Spec.ServiceNamespaces...)
		c.MaxHostPeers = max(c.MaxHostPeers, int(ptr.Deref(g.Spec.MaxHostPeers, meshv1alpha1.DefaultMaxHostPeers)))
		c.MaxHostPeerBytes = max(c.MaxHostPeerBytes, int64(ptr.Deref(g.Spec.MaxHostPeerKiB, meshv1alpha1.DefaultMaxHostPeerKiB))<<10)
	}
	slices.Sort(c.Grants)
	slices.Sort(c.ServiceNamespaces)
	c.ServiceNamespaces = slices.Compact(c.ServiceNamespaces)
	for _, l := range []*[]netip.Prefix{&c.MemberNetworks, &c.LocalNetworks, &c.MemberServers} {
		slices.SortFunc(*l, netip.Prefix.Compare)
		*l = slices.Compact(*l)
	}
	return c
}

// OutsideGrant lists every network a mesh declares that the coverage does
// not allow, whatever its prefix length: the local cluster's networks must
// lie inside LocalNetworks, every other cluster's inside MemberNetworks.
// Each error names its field. Networks that do not parse are validation's
// to report.
func OutsideGrant(mesh *meshv1alpha1.ClusterMesh, c *Coverage) field.ErrorList {
	var errs field.ErrorList
	for i := range mesh.Spec.Clusters {
		e := &mesh.Spec.Clusters[i]
		nets, _ := validation.ClusterNetworks(e, field.NewPath("spec", "clusters").Index(i))
		allowed, list := c.MemberNetworks, "memberNetworks"
		if e.Local {
			allowed, list = c.LocalNetworks, "localNetworks"
		}
		for _, n := range nets {
			if validation.Within(n.Prefix, allowed) {
				continue
			}
			errs = append(errs, field.Invalid(n.Path, n.Prefix.String(), fmt.Sprintf("outside the %s of the ClusterMeshGrants covering namespace %q (%s)",
				list, c.Namespace, orNone(allowed))))
		}
	}
	return errs
}

func orNone(p []netip.Prefix) string {
	if len(p) == 0 {
		return "none"
	}
	return validation.JoinPrefixes(p)
}
