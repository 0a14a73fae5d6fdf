package plancache

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// ErrServicesDisabled is the error of Services for a mesh whose
// spec.multiClusterServices is not Enabled.
var ErrServicesDisabled = errors.New("multi-cluster services are not enabled on this mesh (spec.multiClusterServices)")

// servicesEntry is one mesh's services output, reused like a plan until
// the mesh or one of the member caches changes. It does not age: nothing
// of it depends on the clock but the conditions' transition times.
type servicesEntry struct {
	lockedStamp
	out *services.Output
	// state keeps out by Service, so that the next output recomputes only
	// the Services whose objects changed (services.State.Next).
	state *services.State
	// until is when the answers on the local cluster's namespaces expire.
	until time.Time
}

// Services returns what every member cluster of mesh must hold for its
// exported Services and how every export fared: the one computation the
// services view and the reconciler read, so what is previewed is what is
// written. A cluster whose services caches are not synced is given as
// unreachable with its last known objects (none if they never synced),
// which the computation keeps rather than removes. The output is shared:
// read it, never modify it.
//
// After a change of its inputs, only the Services whose objects the member
// caches replaced are computed again (services.State.Next), so an
// endpoint change costs one Service's computation, not the mesh's.
func (c *Cache) Services(mesh *meshv1alpha1.ClusterMesh) (*services.Output, error) {
	if mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled {
		return nil, fmt.Errorf("ClusterMesh %s/%s: %w", mesh.Namespace, mesh.Name, ErrServicesDisabled)
	}
	e, changes := acquire(c, c.services, types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name})
	defer e.mu.Unlock()
	if e.out != nil && e.current(mesh, changes) && (e.until.IsZero() || c.clock.Now().Before(e.until)) {
		return e.out, nil
	}
	in, until, err := c.servicesInput(mesh)
	if err != nil {
		return nil, fmt.Errorf("computing the services of ClusterMesh %s/%s: %w", mesh.Namespace, mesh.Name, err)
	}
	var out *services.Output
	recomputed, whole := 0, e.state == nil || e.uid != mesh.UID
	if whole {
		out, e.state = services.Start(in)
	} else {
		out, e.state, recomputed = e.state.Next(in)
	}
	klog.V(5).InfoS("Computed mesh services", "mesh", klog.KRef(mesh.Namespace, mesh.Name), "whole", whole, "recomputedServices", recomputed)
	e.set(mesh, changes)
	e.out, e.until = out, until
	return out, nil
}

// servicesInput gathers what the member caches hold for mesh, and which
// namespaces of the local cluster it may not use, until when.
func (c *Cache) servicesInput(mesh *meshv1alpha1.ClusterMesh) (*services.Input, time.Time, error) {
	states := c.members.Snapshot(mesh)
	// The clusters an earlier services mesh holds, as the plan reads them.
	var shared planner.Input
	if err := c.others.fill(mesh, &shared); err != nil {
		return nil, time.Time{}, fmt.Errorf("reading the other meshes with services: %w", err)
	}
	in := &services.Input{MeshNamespace: mesh.Namespace, MeshName: mesh.Name, MeshUID: mesh.UID,
		Installation: c.installation, Now: c.clock.Now()}
	for i := range mesh.Spec.Clusters {
		entry := &mesh.Spec.Clusters[i]
		cl := services.Cluster{Name: entry.Name, Yielded: shared.OtherServicesMeshes[entry.Name].Earlier}
		for _, s := range entry.PodCIDRs {
			// Validation admits canonical CIDRs only; anything else is
			// no network, so nothing inside it is carried.
			if p, err := netip.ParsePrefix(s); err == nil {
				cl.PodCIDRs = append(cl.PodCIDRs, p)
			}
		}
		st := states[entry.Name]
		if svc := st.Services; svc != nil {
			cl.Reachable = st.Reachable && svc.Synced && st.Reason != memberaccess.ErrIsLocalCluster
			cl.Reason, cl.Message = string(svc.Reason), svc.LastError
			if svc.Reason == memberaccess.ErrServicesForbidden {
				cl.Message += "; " + member.ServicesFix(mesh.Namespace, mesh.Name, entry.Name, entry.Local)
			}
			cl.Namespaces, cl.Exports, cl.Services, cl.EndpointSlices, cl.Imports =
				svc.Namespaces, svc.Exports, svc.Services, svc.EndpointSlices, svc.Imports
		}
		if cl.Reason == "" && !st.Reachable {
			cl.Reason, cl.Message = string(st.Reason), st.LastError
		}
		in.Clusters = append(in.Clusters, cl)
	}
	var until time.Time
	for i, entry := range mesh.Spec.Clusters {
		if !entry.Local {
			continue
		}
		notGranted, u, err := c.hostServices.notGranted(mesh, exportedNamespaces(in.Clusters, &in.Clusters[i]))
		if err != nil {
			return nil, time.Time{}, err
		}
		in.Clusters[i].NotGranted, until = notGranted, u
	}
	return in, until, nil
}

// exportedNamespaces are the namespaces of host where a mesh's services
// would be read or written: those of every export of the mesh that exist
// there, sorted.
func exportedNamespaces(all []services.Cluster, host *services.Cluster) []string {
	exists := make(map[string]bool, len(host.Namespaces))
	for _, ns := range host.Namespaces {
		exists[ns] = true
	}
	var out []string
	for _, cl := range all {
		for _, se := range cl.Exports {
			if exists[se.Namespace] {
				out = append(out, se.Namespace)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
