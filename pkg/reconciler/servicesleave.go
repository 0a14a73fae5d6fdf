package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

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

// servicesMayRemain reports whether a mesh with services Disabled may still
// have services objects on its members: its status, the only record that
// survives a restart, shows a ServicesExclusive condition other than the
// one written once none is left (a mesh created Disabled has none).
func servicesMayRemain(mesh *meshv1alpha1.ClusterMesh) bool {
	c := meta.FindStatusCondition(mesh.Status.Conditions, meshv1alpha1.ConditionServicesExclusive)
	return c != nil && c.Reason != ReasonServicesDisabled
}

// removeServices removes a mesh's services objects from every member
// cluster once its services are Disabled. Each cluster is listed from its
// API server, not a cache (the services caches stop with the services):
// only a list that finds nothing confirms it clean. A cluster that does
// not answer, or whose caches never synced, keeps its objects: removing
// says so until it is read.
func (r *Reconciler) removeServices(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, states map[string]clusters.ClusterState) servicesResult {
	var res servicesResult
	if !servicesMayRemain(mesh) {
		return res
	}
	var left []string
	for _, e := range sortedEntries(mesh) {
		st, ok := states[e.Name]
		if !usable(st, ok) {
			left = append(left, fmt.Sprintf("%s (not read: it does not answer or its caches never synced)", e.Name))
			res.facts = append(res.facts, meshEvent{Type: corev1.EventTypeNormal, Reason: EventServicesRemovalHeld,
				Message: fmt.Sprintf("cluster %s: it cannot be read, so the mesh's ServiceImports, derived Services and EndpointSlices there are kept until it can", e.Name)})
			continue
		}
		client, err := r.clusters.ServicesClient(mesh, e.Name)
		if err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", e.Name, err))
			res.errs = append(res.errs, fmt.Sprintf("cluster %s: %v", e.Name, err))
			continue
		}
		found, err := r.removeServicesFrom(ctx, mesh, e.Name, e.Local, client)
		if err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", e.Name, err))
			res.errs = append(res.errs, fmt.Sprintf("cluster %s: %v", e.Name, err))
			continue
		}
		if found > 0 {
			// Deleted now; the next list confirms.
			left = append(left, fmt.Sprintf("%s (%d objects being deleted)", e.Name, found))
			res.unseen = true
			res.events = append(res.events, meshEvent{Type: corev1.EventTypeNormal, Reason: EventServicesRemoved,
				Message: fmt.Sprintf("cluster %s: deleted %d services objects of the mesh (multiClusterServices is not Enabled)", e.Name, found)})
		}
	}
	if len(left) > 0 {
		res.removing = "the mesh no longer carries multi-cluster services; its ServiceImports, derived Services and EndpointSlices remain on " + summarize(left, 5)
	}
	return res
}

// sortedEntries are mesh's spec entries by name.
func sortedEntries(mesh *meshv1alpha1.ClusterMesh) []meshv1alpha1.ClusterEntry {
	out := slices.Clone(mesh.Spec.Clusters)
	slices.SortFunc(out, func(a, b meshv1alpha1.ClusterEntry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// servicesListLimit bounds one live list of one kind on one cluster; more
// are removed by the passes that follow.
const servicesListLimit = 500

// removeServicesFrom lists from cluster's API server the ServiceImports,
// Services and EndpointSlices labelled as mesh's and deletes them, each
// with the UID it was listed with, through the fair writer; it returns how
// many it found (0 confirms the cluster clean). On the local cluster, where
// the server acts with its own identity, only namespaces the mesh may use
// are touched: elsewhere the labels may be forged on a victim's objects.
func (r *Reconciler) removeServicesFrom(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, cluster string, local bool,
	client *clusters.ServicesClient) (int, error) {
	opts := metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + string(mesh.UID), Limit: servicesListLimit}
	imports, err := client.MCS.MulticlusterV1beta1().ServiceImports(metav1.NamespaceAll).List(ctx, opts)
	if neverWritten(err) {
		klog.InfoS("A cluster cannot have services objects of a mesh", "mesh", klog.KObj(mesh), "cluster", cluster, "why", writeErrorText(err))
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing ServiceImports: %s", writeErrorText(err))
	}
	svcs, err := client.Kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("listing Services: %s", writeErrorText(err))
	}
	eps, err := client.Kube.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("listing EndpointSlices: %s", writeErrorText(err))
	}
	var objs []servicesObject
	for i := range eps.Items {
		es := &eps.Items[i]
		objs = append(objs, servicesObject{"EndpointSlice", es, client.Kube.DiscoveryV1().EndpointSlices(es.Namespace).Delete})
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		objs = append(objs, servicesObject{"Service", s, client.Kube.CoreV1().Services(s.Namespace).Delete})
	}
	for i := range imports.Items {
		si := &imports.Items[i]
		objs = append(objs, servicesObject{"ServiceImport", si, client.MCS.MulticlusterV1beta1().ServiceImports(si.Namespace).Delete})
	}
	var denied map[string]string
	if local {
		if denied, err = r.services.HostServicesNotGranted(mesh, objectNamespaces(objs)); err != nil {
			return 0, fmt.Errorf("deciding the namespaces the mesh may use: %w", err)
		}
	}
	listed := len(objs)
	objs = ownedServicesObjects(mesh, objs, denied)
	if kept := listed - len(objs); kept > 0 && len(denied) > 0 {
		klog.InfoS("Kept labelled services objects in namespaces of the local cluster the mesh may not use", "mesh", klog.KObj(mesh), "objects", kept, "namespaces", len(denied))
	}
	if len(objs) == 0 {
		return 0, nil
	}
	p := &servicesPass{ctx: ctx, mesh: mesh, client: client}
	key := types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}
	var wg sync.WaitGroup
	for _, o := range objs {
		wg.Add(1)
		r.writer.submit(client.Connection, key, func() {
			defer wg.Done()
			p.delete(o.del, o.kind, o.obj)
		})
	}
	wg.Wait()
	klog.InfoS("Removing the services objects of a mesh from a cluster", "mesh", klog.KObj(mesh), "cluster", cluster,
		"found", len(objs), "deleted", p.deleted, "failed", len(p.errs))
	if len(p.errs) > 0 {
		return len(objs), fmt.Errorf("%d deletions failed: %s", len(p.errs), summarize(p.errs, 3))
	}
	return len(objs), nil
}

// servicesObject is one listed services object and how it is deleted.
type servicesObject struct {
	kind string
	obj  metav1.Object
	del  func(context.Context, string, metav1.DeleteOptions) error
}

// ownedServicesObjects keeps the objects carrying all of mesh's labels
// outside the namespaces denied.
func ownedServicesObjects(mesh *meshv1alpha1.ClusterMesh, objs []servicesObject, denied map[string]string) []servicesObject {
	var out []servicesObject
	for _, o := range objs {
		if _, no := denied[o.obj.GetNamespace()]; no {
			continue
		}
		if planner.LabelsManagedBy(o.obj.GetLabels(), mesh.Namespace, mesh.Name, mesh.UID) {
			out = append(out, o)
		}
	}
	return out
}

// objectNamespaces are the namespaces of objs, sorted, once each.
func objectNamespaces(objs []servicesObject) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.obj.GetNamespace())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// servicesOnce reports whether mesh carries services now or may still
// have services objects on its members from when it did.
func servicesOnce(mesh *meshv1alpha1.ClusterMesh) bool {
	return mesh.Spec.MultiClusterServices == meshv1alpha1.MultiClusterServicesEnabled || servicesMayRemain(mesh)
}

// mayHoldServices reports whether a cluster that cannot be read may hold
// services objects of a deleted mesh: the mesh had services and the
// cluster was read once (a cluster never reached holds nothing of it).
func (r *Reconciler) mayHoldServices(mesh *meshv1alpha1.ClusterMesh, cluster string, st clusters.ClusterState) bool {
	if r.services == nil || !servicesOnce(mesh) {
		return false
	}
	cs := findClusterStatus(mesh.Status.Clusters, cluster)
	return st.Synced || (st.Services != nil && !st.Services.Since.IsZero()) || (cs != nil && cs.PeersApplied > 0)
}

// removeServicesOnDeletion removes a deleted mesh's services objects from
// a member cluster that answers; it returns how many it found.
func (r *Reconciler) removeServicesOnDeletion(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, cluster string) (int, error) {
	if r.services == nil || !servicesOnce(mesh) {
		return 0, nil
	}
	client, err := r.clusters.ServicesClient(mesh, cluster)
	if err != nil {
		return 0, err
	}
	local := false
	for _, e := range mesh.Spec.Clusters {
		local = local || (e.Name == cluster && e.Local)
	}
	return r.removeServicesFrom(ctx, mesh, cluster, local, client)
}

// removeServicesHeld removes mesh's services objects from the cluster of a
// held (departed) connection; it returns how many it found.
func (r *Reconciler) removeServicesHeld(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, key clusters.HoldKey) (int, error) {
	if r.services == nil || !servicesOnce(mesh) {
		return 0, nil
	}
	client, local, err := r.clusters.HeldServicesClient(key)
	if err != nil {
		return 0, err
	}
	return r.removeServicesFrom(ctx, mesh, key.Entry, local, client)
}

// neverWritten reports whether a refused list of ServiceImports shows that
// the mesh wrote none on the cluster: the mcs-api CRDs are not served, or
// the identity may not list them, without which the services caches never
// synced and nothing was written there.
func neverWritten(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
}
