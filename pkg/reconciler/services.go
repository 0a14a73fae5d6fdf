package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// Event reasons of multi-cluster services.
const (
	// EventServicesChanged: this pass wrote services objects on a cluster.
	EventServicesChanged = "ServicesChanged"
	// EventServicesFailed: writes of services objects failed on a cluster.
	EventServicesFailed = "ServicesApplyFailed"
	// EventServicesNotComputed: the services computation failed.
	EventServicesNotComputed = "ServicesNotComputed"
	// EventServicesDeletionsHeld: a cluster's services were never read, so
	// nothing was deleted anywhere on its account.
	EventServicesDeletionsHeld = "ServicesDeletionsHeld"
)

// ServicesPlanner computes what a mesh's multi-cluster services need on
// each member cluster: the plan cache's Services, the one computation the
// services view reads too.
type ServicesPlanner interface {
	Services(mesh *meshv1alpha1.ClusterMesh) (*services.Output, error)
}

// servicesResult is what one pass did for a mesh's services.
type servicesResult struct {
	// facts persist from pass to pass (announced once); events are what
	// this pass did.
	facts, events []meshEvent
	errs          []string
	// unseen: a write found the member cache behind (an object created or
	// changed since it was read); the mesh is looked at again soon.
	unseen bool
	// removing, when services are no longer Enabled, says which member
	// clusters may still hold the mesh's services objects (empty: none).
	removing string
}

// syncServices writes what the services computation says on every member
// cluster that answers and whose services caches have synced. Objects are
// only created, updated (with the resourceVersion read) and deleted (with
// the UID read), never patched: the member identity may not patch. Only
// objects carrying the mesh's labels are updated or deleted (the
// computation lists no other), and no deletion happens while a cluster's
// services have never been read: its exports are unknown, not absent.
func (r *Reconciler) syncServices(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, members map[string]clusters.Member) servicesResult {
	if r.services == nil {
		return servicesResult{}
	}
	meshKey := mesh.Namespace + "/" + mesh.Name
	if mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled {
		r.reported.reportServices(meshKey, nil)
		return r.removeServices(ctx, mesh, members)
	}
	out, err := r.services.Services(mesh)
	r.reported.reportServices(meshKey, out)
	if err != nil {
		msg := fmt.Sprintf("computing the multi-cluster services: %v", err)
		return servicesResult{errs: []string{msg}, facts: []meshEvent{{Type: corev1.EventTypeWarning, Reason: EventServicesNotComputed, Message: msg}}}
	}
	var res servicesResult
	deletions := true
	for _, name := range slices.Sorted(maps.Keys(members)) {
		svc := members[name].State.Services
		if svc != nil && svc.Reason != "" && svc.Reason != memberaccess.ErrPending {
			// A limit, missing CRDs, a refusal: said once, with the cluster's reason.
			msg := fmt.Sprintf("cluster %s: its services are not used: %s", name, svc.LastError)
			if svc.Reason == memberaccess.ErrServicesForbidden {
				local := slices.ContainsFunc(mesh.Spec.Clusters, func(e meshv1alpha1.ClusterEntry) bool { return e.Name == name && e.Local })
				msg += "; " + member.ServicesFix(mesh.Namespace, mesh.Name, name, local)
			}
			res.facts = append(res.facts, meshEvent{Type: corev1.EventTypeWarning, Reason: string(svc.Reason), Message: msg})
		}
		if svc == nil || (svc.Since.IsZero() && svc.Reason != memberaccess.ErrMCSCRDMissing) {
			deletions = false
			res.facts = append(res.facts, meshEvent{Type: corev1.EventTypeNormal, Reason: EventServicesDeletionsHeld,
				Message: fmt.Sprintf("cluster %s: its services were never read; no import is removed until they are", name)})
		}
	}
	if n := notGrantedNamespaces(out); n > 0 {
		res.facts = append(res.facts, meshEvent{Type: corev1.EventTypeWarning, Reason: services.BlockedHostNamespaceNotGranted,
			Message: fmt.Sprintf("%d namespace(s) of the cluster this server runs in hold exports of the mesh or would hold its imports, and the mesh may not use them: "+
				"nothing is read or written there (the services view counts them without naming them); a ClusterMeshGrant naming them in serviceNamespaces, or the author's rights there, allows it", n)})
	}
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	known, found := r.svcCurrent.of(key), map[string]*clusterCurrent{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range out.Clusters {
		co := &out.Clusters[i]
		mb := members[co.Name]
		st := mb.State
		if !co.Reachable || !st.Reachable || st.Services == nil || !st.Services.Synced {
			continue // nothing is written to, or deleted on, a cluster on a guess
		}
		if co.Yielded {
			continue // an earlier services mesh holds it: its exports' conditions are that mesh's
		}
		client, err := mb.Services()
		if err != nil {
			res.errs = append(res.errs, fmt.Sprintf("cluster %s: %v", co.Name, err))
			continue
		}
		p := newServicesPass(ctx, mesh, co, exportsOf(out, co.Name), st.Services, client, deletions)
		p.written = r.writtenSvc
		if k := known[co.Name]; k != nil {
			p.known = k
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := p.run(r.writer, key)
			mu.Lock()
			defer mu.Unlock()
			res.add(co.Name, done)
			found[co.Name] = done.found
		}()
	}
	wg.Wait()
	r.svcCurrent.set(key, found)
	return res
}

// notGrantedNamespaces counts the namespaces of the local cluster the
// mesh's services may not use and would.
func notGrantedNamespaces(out *services.Output) int {
	seen := map[string]bool{}
	for _, co := range out.Clusters {
		for _, imp := range co.Imports {
			if imp.Blocked == services.BlockedHostNamespaceNotGranted {
				seen[imp.Namespace] = true
			}
		}
	}
	for _, r := range out.Exports {
		if r.Valid == services.ExportHostNamespaceNotGranted {
			seen[r.Namespace] = true
		}
	}
	return len(seen)
}

// add records what one cluster's pass did.
func (res *servicesResult) add(cluster string, p *servicesPass) {
	res.unseen = res.unseen || p.unseen
	if n := p.writes(); n > 0 {
		res.events = append(res.events, meshEvent{Type: corev1.EventTypeNormal, Reason: EventServicesChanged,
			Message: fmt.Sprintf("cluster %s: created %d, updated %d, deleted %d services objects", cluster, p.created, p.updated, p.deleted)})
		klog.InfoS("Services objects written", "cluster", cluster, "created", p.created, "updated", p.updated, "deleted", p.deleted)
	}
	if len(p.errs) > 0 {
		msg := fmt.Sprintf("cluster %s: %d failed: %s", cluster, len(p.errs), summarize(p.errs, 3))
		res.errs = append(res.errs, msg)
		res.events = append(res.events, meshEvent{Type: corev1.EventTypeWarning, Reason: EventServicesFailed, Message: msg})
	}
}

// err is the pass's failure, if any, for the mesh's requeue.
func (res servicesResult) err(key types.NamespacedName) error {
	if len(res.errs) == 0 {
		return nil
	}
	return errors.New("writing services of " + key.String() + ": " + strings.Join(res.errs, "; "))
}

// exportsOf are the export results of cluster.
func exportsOf(out *services.Output, cluster string) []services.ExportResult {
	var rs []services.ExportResult
	for _, r := range out.Exports {
		if r.Cluster == cluster {
			rs = append(rs, r)
		}
	}
	return rs
}

// Reasons and events of removing a mesh's services objects once it no
// longer carries a cluster's services.
const (
	// ReasonServicesRemoving: services are Disabled and some member
	// cluster may still hold the mesh's imports (ServicesExclusive).
	ReasonServicesRemoving = "ServicesRemoving"
	// EventServicesRemoved: a cluster was found holding services objects
	// of the mesh, which were deleted.
	EventServicesRemoved = "ServicesRemoved"
	// EventServicesRemovalHeld: a cluster could not be read, so the
	// mesh's services objects there are kept until it can.
	EventServicesRemovalHeld = "ServicesRemovalHeld"
)

// removeServices removes a mesh's services objects from every member
// cluster once its services are Disabled (cleanup): on the local cluster
// too, whatever allowed the namespaces they were written in. A cluster that
// does not answer, or whose caches never synced, keeps its objects:
// removing says so until it is read.
func (r *Reconciler) removeServices(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, members map[string]clusters.Member) servicesResult {
	var res servicesResult
	if !servicesMayRemain(mesh) {
		return res
	}
	var left []string
	for _, name := range slices.Sorted(maps.Keys(members)) {
		mb := members[name]
		if !usable(mb.State, true) {
			left = append(left, fmt.Sprintf("%s (not read: it does not answer or its caches never synced)", name))
			res.facts = append(res.facts, meshEvent{Type: corev1.EventTypeNormal, Reason: EventServicesRemovalHeld,
				Message: fmt.Sprintf("cluster %s: it cannot be read, so the mesh's ServiceImports, derived Services and EndpointSlices there are kept until it can", name)})
			continue
		}
		done := r.cleanup(ctx, mesh, mb, written{services: true})
		switch {
		case done.err != nil:
			left = append(left, fmt.Sprintf("%s (%v)", name, done.err))
			res.errs = append(res.errs, fmt.Sprintf("cluster %s: %v", name, done.err))
		case done.more:
			left = append(left, fmt.Sprintf("%s (more being deleted)", name))
			res.unseen = true
		}
		if done.found > 0 {
			res.events = append(res.events, meshEvent{Type: corev1.EventTypeNormal, Reason: EventServicesRemoved,
				Message: fmt.Sprintf("cluster %s: deleted %d services objects of the mesh (multiClusterServices is not Enabled)", name, done.found)})
		}
	}
	if len(left) > 0 {
		res.removing = "the mesh no longer carries multi-cluster services; its ServiceImports, derived Services and EndpointSlices remain on " + summarize(left, 5)
	}
	return res
}
