package plancache

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// DefaultGracePeriod is how long a mesh stored before grants existed, and
// covered by none, keeps its access to the local cluster after an upgrade.
const DefaultGracePeriod = 24 * time.Hour

// Grants is what the cache uses of the grants (grants.Index): coverage of a
// namespace now, and which namespaces' coverage changed.
type Grants interface {
	Coverage(namespace string) (grants.Coverage, error)
	AddChangeHandler(f func(namespace string))
	HasSynced() bool
}

var _ Grants = (*grants.Index)(nil)

// noGrants is the grants of a cache configured without any: none covers anything.
type noGrants struct{}

func (noGrants) Coverage(ns string) (grants.Coverage, error) {
	return grants.Coverage{Namespace: ns}, nil
}
func (noGrants) AddChangeHandler(func(string)) {}
func (noGrants) HasSynced() bool               { return true }

// hostSource gives the planner the mesh's access to the local cluster: from
// admission's record on the mesh, the grants covering its namespace now,
// and the upgrade grace period. A change of grants invalidates the plans of
// every mesh in the namespaces it touches.
type hostSource struct {
	grants Grants
	grace  time.Duration
	// meshesIn lists the stored meshes of a namespace.
	meshesIn func(namespace string) []types.NamespacedName
	// servers is the member server policy, nil for none.
	servers memberaccess.ServerPolicy
}

func (s *hostSource) fill(mesh *meshv1alpha1.ClusterMesh, in *planner.Input) error {
	cov, err := s.grants.Coverage(mesh.Namespace)
	if err != nil {
		// Never plan on half the facts: a plan without the grants would
		// remove what they allow.
		return err
	}
	in.HostAccess = hostAccess(mesh, &cov, in.Now, s.grace)
	if s.servers != nil {
		in.HostAccess.EndpointNetworks = s.servers.AllowedServers(mesh.Namespace)
	}
	return nil
}

func (s *hostSource) onChange(f func(types.NamespacedName)) {
	s.grants.AddChangeHandler(func(ns string) {
		for _, key := range s.meshesIn(ns) {
			f(key)
		}
	})
}

func (s *hostSource) hasSynced() bool { return s.grants.HasSynced() }

// hostAccess decides what a mesh may do on the local cluster. It is pure:
// the record admission left on the mesh says on what basis the mesh was
// admitted; grants are evaluated now; a mesh without a record was stored
// before grants existed, and its grace period runs from the moment its
// Granted condition first said so, which survives restarts.
func hostAccess(mesh *meshv1alpha1.ClusterMesh, cov *grants.Coverage, now time.Time, grace time.Duration) planner.HostAccess {
	if !hasLocal(mesh) {
		return planner.HostAccess{Mode: planner.HostUnrestricted, View: meshv1alpha1.HostAccessPlan{
			Granted: true, Basis: meshv1alpha1.HostAccessBasisNoLocalCluster, Reason: planner.HostReasonNoLocalCluster,
			Message: "the mesh has no local cluster: it puts nothing on the cluster this server runs in",
		}}
	}
	switch mesh.Annotations[meshv1alpha1.AnnotationHostAccess] {
	case meshv1alpha1.HostAccessPeerRights:
		return planner.HostAccess{Mode: planner.HostUnrestricted, View: meshv1alpha1.HostAccessPlan{
			Granted: true, Basis: meshv1alpha1.HostAccessBasisPeerRights, Reason: planner.HostReasonPeerRights,
			Message: "the spec was last written by a user who may create, update and delete peers.kilo.squat.ai on the local cluster",
		}}
	case "":
		if !cov.Covered() {
			return graceAccess(mesh, now, grace)
		}
	}
	// A grant, or a record no admission writes: the grants decide.
	return grantAccess(mesh, cov)
}

func grantAccess(mesh *meshv1alpha1.ClusterMesh, cov *grants.Coverage) planner.HostAccess {
	if !cov.Covered() {
		return planner.HostAccess{Mode: planner.HostDenied, View: meshv1alpha1.HostAccessPlan{
			Basis: meshv1alpha1.HostAccessBasisNone, Reason: planner.HostReasonNoGrant,
			Message: fmt.Sprintf("no ClusterMeshGrant covers namespace %q: the mesh's Peers on the local cluster are removed and the local cluster is not advertised", mesh.Namespace),
		}}
	}
	view := meshv1alpha1.HostAccessPlan{
		Granted: true, Basis: meshv1alpha1.HostAccessBasisGrant, Reason: planner.HostReasonGranted,
		Grants:         cov.Grants,
		MemberNetworks: strs(cov.MemberNetworks),
		LocalNetworks:  strs(cov.LocalNetworks),
		MaxPeers:       int32(cov.MaxHostPeers),
		MaxPeerKiB:     int32(cov.MaxHostPeerBytes >> 10),
		Message:        fmt.Sprintf("covered by ClusterMeshGrant %s", strings.Join(cov.Grants, ", ")),
	}
	if outside := grants.OutsideGrant(mesh, cov); len(outside) > 0 {
		// The first few name their fields; the plan's conflicts list what
		// is withheld address by address.
		var shown []string
		for _, e := range outside[:min(len(outside), 3)] {
			shown = append(shown, fmt.Sprintf("%s %v", e.Field, e.BadValue))
		}
		view.Granted, view.Reason = false, planner.HostReasonNetworksNotGranted
		view.Message = fmt.Sprintf("%d network(s) lie outside the memberNetworks or localNetworks of ClusterMeshGrant %s and are withheld from and about the local cluster: %s",
			len(outside), strings.Join(cov.Grants, ", "), strings.Join(shown, ", "))
	}
	return planner.HostAccess{Mode: planner.HostBounded, MemberNetworks: cov.MemberNetworks, LocalNetworks: cov.LocalNetworks,
		MaxPeers: cov.MaxHostPeers, MaxPeerBytes: cov.MaxHostPeerBytes, View: view}
}

// graceAccess is the access of a mesh stored before grants existed and
// covered by none: unchanged until the grace period ends, then none.
func graceAccess(mesh *meshv1alpha1.ClusterMesh, now time.Time, grace time.Duration) planner.HostAccess {
	start := now
	c := meta.FindStatusCondition(mesh.Status.Conditions, meshv1alpha1.ConditionGranted)
	switch {
	case c == nil:
	case c.Status == metav1.ConditionFalse && (c.Reason == planner.HostReasonUpgradeGracePeriod || c.Reason == planner.HostReasonGracePeriodExpired):
		start = c.LastTransitionTime.Time
	default:
		// Access was granted or refused on another basis since: the
		// grace period was for the upgrade only.
		return grantAccess(mesh, &grants.Coverage{Namespace: mesh.Namespace})
	}
	ends := metav1.NewTime(start.Add(grace).UTC().Truncate(time.Second))
	if now.Before(ends.Time) {
		return planner.HostAccess{Mode: planner.HostUnrestricted, View: meshv1alpha1.HostAccessPlan{
			Basis: meshv1alpha1.HostAccessBasisUpgradeGracePeriod, Reason: planner.HostReasonUpgradeGracePeriod, GracePeriodEnds: &ends,
			Message: fmt.Sprintf("the mesh was stored before ClusterMeshGrants existed and none covers namespace %q: it keeps its Peers on the local cluster until %s, "+
				"unless a ClusterMeshGrant covers the namespace or a user who may manage peers.kilo.squat.ai there updates its spec", mesh.Namespace, ends.Format(time.RFC3339)),
		}}
	}
	return planner.HostAccess{Mode: planner.HostDenied, View: meshv1alpha1.HostAccessPlan{
		Basis: meshv1alpha1.HostAccessBasisNone, Reason: planner.HostReasonGracePeriodExpired, GracePeriodEnds: &ends,
		Message: fmt.Sprintf("the mesh was stored before ClusterMeshGrants existed, none covers namespace %q, and the upgrade grace period ended at %s: "+
			"its Peers on the local cluster are removed", mesh.Namespace, ends.Format(time.RFC3339)),
	}}
}

func strs(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func hasLocal(mesh *meshv1alpha1.ClusterMesh) bool {
	for _, c := range mesh.Spec.Clusters {
		if c.Local {
			return true
		}
	}
	return false
}
