package clusters

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// The caches hold thousands of Nodes per cluster; the transforms below keep
// only what the planner reads. A real Node's images, nodeInfo, capacity,
// managedFields and heartbeat conditions are several times the size of what
// remains. Transforms must be idempotent: client-go may apply them to an
// object already transformed.

// lastAppliedAnnotation holds a copy of the whole object as last applied by
// kubectl: large, and never needed here.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

var (
	_ cache.TransformFunc = transformNode
	_ cache.TransformFunc = transformPeer
	_ cache.TransformFunc = transformSecret
)

// transformNode keeps name, labels, annotations, pod CIDRs, addresses and the
// Ready condition (without its heartbeat time, so that heartbeats alone do
// not look like changes), plus the metadata caches and planners rely on.
func transformNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: slimMeta(&n.ObjectMeta),
		Spec:       corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
		Status:     corev1.NodeStatus{Addresses: n.Status.Addresses},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			c.LastHeartbeatTime = metav1.Time{}
			out.Status.Conditions = []corev1.NodeCondition{c}
			break
		}
	}
	return out, nil
}

// transformPeer turns the dynamic client's Unstructured Peer into a typed
// one with its metadata (name, uid, resourceVersion, labels, annotations)
// and spec.
func transformPeer(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	// Annotations are kept (but kubectl's last-applied copy): the planner
	// compares its own (source group and leader) with them, and without
	// them every managed Peer would look changed on every pass.
	p := &kilov1alpha1.Peer{ObjectMeta: slimMeta(&metav1.ObjectMeta{
		Name:              u.GetName(),
		UID:               u.GetUID(),
		ResourceVersion:   u.GetResourceVersion(),
		Generation:        u.GetGeneration(),
		CreationTimestamp: u.GetCreationTimestamp(),
		DeletionTimestamp: u.GetDeletionTimestamp(),
		Labels:            u.GetLabels(),
		Annotations:       u.GetAnnotations(),
	})}
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		// The CRD's schema makes this conversion succeed; should a Peer slip
		// through with a malformed spec, Kilo ignores it, and an empty spec
		// here makes the planner rewrite it if it owns it.
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &p.Spec); err != nil {
			p.Spec = kilov1alpha1.PeerSpec{}
		}
	}
	return p, nil
}

// transformSecret keeps the data of a kubeconfig Secret, dropping its
// annotations: kubectl's last-applied copy would be a second copy of the
// credentials in memory.
func transformSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion},
		Data:       s.Data,
	}, nil
}

// slimMeta keeps the identifying metadata, labels and annotations (without
// kubectl's last-applied copy).
func slimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		Labels:            m.Labels,
		Annotations:       m.Annotations,
	}
	if _, ok := m.Annotations[lastAppliedAnnotation]; ok {
		out.Annotations = withoutKey(m.Annotations, lastAppliedAnnotation)
	}
	return out
}

// unchanged reports whether an update changed nothing the planner would
// decide differently at now: a kubelet status update of fields the
// transform dropped, or kg's routine check-in (a new last-seen on a node
// Kilo still counts). kg checks in every 30 s on every node, so at a few
// thousand nodes reporting check-ins would re-plan the mesh all the time;
// a node going silent is caught by the reconciler's own timer instead.
func unchanged(oldObj, newObj any, now time.Time) bool {
	switch o := oldObj.(type) {
	case *corev1.Node:
		n, ok := newObj.(*corev1.Node)
		if !ok {
			return false
		}
		a, b := *o, *n
		a.ResourceVersion, b.ResourceVersion = "", ""
		if a.Annotations[kilov1alpha1.AnnotationLastSeen] != b.Annotations[kilov1alpha1.AnnotationLastSeen] {
			if !kilov1alpha1.CheckedIn(o, now) || !kilov1alpha1.CheckedIn(n, now) {
				return false // the node comes back or goes silent
			}
			a.Annotations = withoutKey(a.Annotations, kilov1alpha1.AnnotationLastSeen)
			b.Annotations = withoutKey(b.Annotations, kilov1alpha1.AnnotationLastSeen)
		}
		return equality.Semantic.DeepEqual(&a, &b)
	case *kilov1alpha1.Peer:
		n, ok := newObj.(*kilov1alpha1.Peer)
		if !ok {
			return false
		}
		a, b := *o, *n
		a.ResourceVersion, b.ResourceVersion = "", ""
		return equality.Semantic.DeepEqual(&a, &b)
	}
	return false
}

// withoutKey returns a copy of m without key; m itself may be a cache's.
func withoutKey(m map[string]string, key string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
