package clusters

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// The caches hold thousands of Nodes and Peers per cluster, of API servers
// that may be hostile: what arrives is cut down at once, page by page and
// event by event (see objectLimit), to what the planner reads, and
// weighed. A real Node's images, nodeInfo, capacity, conditions and
// managedFields are several times the size of what remains; a fake API
// server's Node may be anything up to the size of an answer.

// lastAppliedAnnotation holds a copy of the whole object as last applied by
// kubectl: large, and never needed here.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// kiloAnnotationPrefix starts the Node annotations the planner reads (Kilo's
// own); the others are not kept.
const kiloAnnotationPrefix = kilov1alpha1.GroupName + "/"

// Weights approximate the heap an object kept in a cache takes: the bytes
// of its strings, plus a fixed cost for the object and for each map entry
// or list element. They are what Config.MaxCacheBytes bounds.
const (
	objectOverhead = 512
	entryOverhead  = 48
)

// maxNodeBytes is the most a Node may weigh in the cache: a real Node's
// labels and Kilo annotations take a few KiB (hundreds of Node Feature
// Discovery labels stay within 20 KiB). A heavier Node is kept as a stub
// marked meshv1alpha1.AnnotationNodeTooLarge.
const maxNodeBytes = 32 << 10

var _ cache.TransformFunc = transformSecret

// slimNode is what the cache keeps of n, and its weight: identity, labels
// (any of them may be a mesh entry's topologyLabel, and the cache is shared
// by every mesh naming the cluster), Kilo's annotations, pod CIDRs and
// addresses. A Node heavier than maxNodeBytes becomes a stub.
func slimNode(n *corev1.Node) (*corev1.Node, int64) {
	if why, ok := n.Annotations[meshv1alpha1.AnnotationNodeTooLarge]; ok {
		if len(why) > memberaccess.MaxErrorText {
			why = "the Node is larger than this server keeps of one Node"
		}
		return nodeStub(n, why)
	}
	var annotations map[string]string
	for k, v := range n.Annotations {
		if strings.HasPrefix(k, kiloAnnotationPrefix) {
			if annotations == nil {
				annotations = make(map[string]string, len(n.Annotations))
			}
			annotations[k] = v
		}
	}
	w := int64(objectOverhead+len(n.Name)+len(n.UID)+len(n.ResourceVersion)+len(n.Spec.PodCIDR)) +
		mapWeight(n.Labels) + mapWeight(annotations) + listWeight(n.Spec.PodCIDRs)
	for _, a := range n.Status.Addresses {
		w += int64(entryOverhead + len(a.Type) + len(a.Address))
	}
	if w > maxNodeBytes {
		return nodeStub(n, fmt.Sprintf("the Node's labels, Kilo annotations, pod CIDRs and addresses weigh %d KiB, more than the %d KiB this server keeps of one Node",
			w>>10, maxNodeBytes>>10))
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			UID:               n.UID,
			ResourceVersion:   n.ResourceVersion,
			Generation:        n.Generation,
			CreationTimestamp: n.CreationTimestamp,
			DeletionTimestamp: n.DeletionTimestamp,
			Labels:            n.Labels,
			Annotations:       annotations,
		},
		Spec:   corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
		Status: corev1.NodeStatus{Addresses: n.Status.Addresses},
	}, w
}

// nodeStub stands for a Node the cache does not keep: its name and identity,
// and why.
func nodeStub(n *corev1.Node, why string) (*corev1.Node, int64) {
	name := n.Name
	if len(name) > 253 {
		name = name[:253] // no real Node has a longer name
	}
	stub := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:              name,
		UID:               n.UID,
		ResourceVersion:   n.ResourceVersion,
		CreationTimestamp: n.CreationTimestamp,
		Annotations:       map[string]string{meshv1alpha1.AnnotationNodeTooLarge: why},
	}}
	return stub, int64(objectOverhead + entryOverhead + len(name) + len(n.UID) + len(n.ResourceVersion) + len(why))
}

// slimPeer is what the cache keeps of p, and its weight: its metadata
// (labels and annotations, but kubectl's last-applied copy: the planner
// compares its own with them, and without them every managed Peer would look
// changed on every pass) and spec. A Peer is not cut down further: those
// this server writes for a large location carry thousands of allowed IPs,
// and the cache's weight as a whole is bounded instead.
func slimPeer(p *kilov1alpha1.Peer) (*kilov1alpha1.Peer, int64) { return (*interner)(nil).slimPeer(p) }

// slimPeer is slimPeer with the Peer's labels, annotations and allowed
// IPs shared with the cached Peers that have the same, and weighed once.
// Without that, one namespace's mesh of 100 clusters of one 100-node
// location each weighed 91 MiB in the caches (64 MiB is its share under
// the default 512 MiB limit) while the whole server held less than 100 MiB.
func (in *interner) slimPeer(p *kilov1alpha1.Peer) (*kilov1alpha1.Peer, int64) {
	labels, labelsShared := in.labels(p.Labels)
	annotations, annotationsShared := in.labels(withoutLastApplied(p.Annotations))
	allowed, allowedShared := in.list(p.Spec.AllowedIPs)
	out := &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{
			Name:              p.Name,
			UID:               p.UID,
			ResourceVersion:   p.ResourceVersion,
			Generation:        p.Generation,
			CreationTimestamp: p.CreationTimestamp,
			DeletionTimestamp: p.DeletionTimestamp,
			Labels:            labels,
			Annotations:       annotations,
		},
		Spec: p.Spec,
	}
	out.Spec.AllowedIPs = allowed
	w := int64(objectOverhead+len(p.Name)+len(p.UID)+len(p.ResourceVersion)+len(p.Spec.PublicKey)+len(p.Spec.PresharedKey)) +
		weighed(labelsShared, mapWeight(labels)) + weighed(annotationsShared, mapWeight(annotations)) + weighed(allowedShared, listWeight(allowed))
	if e := p.Spec.Endpoint; e != nil {
		w += int64(entryOverhead + len(e.DNSOrIP.DNS) + len(e.DNSOrIP.IP))
	}
	return out, w
}

func mapWeight(m map[string]string) int64 {
	var w int64
	for k, v := range m {
		w += int64(entryOverhead + len(k) + len(v))
	}
	return w
}

func listWeight(l []string) int64 {
	var w int64
	for _, s := range l {
		w += int64(entryOverhead + len(s))
	}
	return w
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

// unchanged reports whether an update changed nothing the planner would
// decide differently at now: a kubelet status update of fields the
// caches drop, or kg's routine check-in (a new last-seen on a node
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
		if o.Annotations[kilov1alpha1.AnnotationLastSeen] != n.Annotations[kilov1alpha1.AnnotationLastSeen] &&
			(!kilov1alpha1.CheckedIn(o, now) || !kilov1alpha1.CheckedIn(n, now)) {
			return false // the node comes back or goes silent
		}
		return sameSlimNode(o, n)
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

// sameSlimNode compares what slimNode keeps of a Node (TestSameSlimNode
// fails when it keeps more), but the resourceVersion and the last check-in,
// field by field: it runs for every check-in of every node, and a
// reflective comparison cost 24 µs of it.
func sameSlimNode(o, n *corev1.Node) bool {
	return o.Name == n.Name && o.UID == n.UID && o.Generation == n.Generation &&
		o.CreationTimestamp.Equal(&n.CreationTimestamp) && o.DeletionTimestamp.Equal(n.DeletionTimestamp) &&
		maps.Equal(o.Labels, n.Labels) && sameBut(o.Annotations, n.Annotations, kilov1alpha1.AnnotationLastSeen) &&
		o.Spec.PodCIDR == n.Spec.PodCIDR && slices.Equal(o.Spec.PodCIDRs, n.Spec.PodCIDRs) &&
		slices.Equal(o.Status.Addresses, n.Status.Addresses)
}

// sameBut reports whether a and b hold the same entries but for key.
func sameBut(a, b map[string]string, key string) bool {
	_, inA := a[key]
	_, inB := b[key]
	if len(a)-boolInt(inA) != len(b)-boolInt(inB) {
		return false
	}
	for k, v := range a {
		if k == key {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withoutLastApplied is m without kubectl's last-applied copy; m itself
// when it has none.
func withoutLastApplied(m map[string]string) map[string]string {
	if _, ok := m[lastAppliedAnnotation]; !ok {
		return m
	}
	return withoutKey(m, lastAppliedAnnotation)
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
