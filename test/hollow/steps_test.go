//go:build e2e

package hollow

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/hollow"
	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// probe: /readyz, the discovery documents the probe reads, /version.
func probe(ctx context.Context, m *member) error {
	rc := m.kube.Discovery().RESTClient()
	var code int
	err := rc.Get().AbsPath("/readyz").MaxRetries(0).Do(ctx).StatusCode(&code).Error()
	m.note("readyz: %s %d", outcome(err), code)
	for _, path := range []string{"/apis/kilo.squat.ai/v1alpha1", "/apis/multicluster.x-k8s.io/v1beta1", "/apis/nothere.example.com/v1"} {
		var list metav1.APIResourceList
		err := rc.Get().AbsPath(path).MaxRetries(0).Do(ctx).Into(&list)
		var names []string
		for _, r := range list.APIResources {
			if r.Name == "peers" || r.Name == "serviceexports" || r.Name == "serviceimports" {
				names = append(names, fmt.Sprintf("%s namespaced=%v", r.Name, r.Namespaced))
			}
		}
		slices.Sort(names)
		m.note("discovery %s: %s %v", path, outcome(err), names)
	}
	v, err := m.kube.Discovery().ServerVersion()
	m.note("version: %s major %s", outcome(err), v.Major)
	return nil
}

// identity: what memberaccess.ReadIdentity makes of the member.
func identity(ctx context.Context, m *member) error {
	id, e, definite := memberaccess.ReadIdentity(ctx, m.identity, m.cfg.Host)
	ns, err := m.kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return err
	}
	uid, fingerprint, _ := strings.Cut(id, "@")
	m.note("identity: problem %v, definite %v, the kube-system UID %v, a CA fingerprint of %d characters", e != nil, definite, uid == string(ns.UID), len(fingerprint))
	return nil
}

// nodesListWatch: Nodes created and checked in, listed in pages, watched
// from the list with bookmarks, and watched from a compacted version.
func nodesListWatch(ctx context.Context, m *member) error {
	layout := hollow.Layout{Members: 1, Nodes: 7, NodesPerLocation: 3, Granularity: "location"}
	nodes := m.kube.CoreV1().Nodes()
	for j := range layout.Nodes {
		want, err := layout.Node(0, j, time.Now()).Build()
		if err != nil {
			return err
		}
		created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		// Another writer (kube-controller-manager's TTL controller) may
		// have annotated the Node since: the status is set on the live one.
		var updated *corev1.Node
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			live.Status = want.Status
			updated, err = nodes.UpdateStatus(ctx, live, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		m.note("node %d: created with %d addresses, then %d after a status update", j, len(created.Status.Addresses), len(updated.Status.Addresses))
	}
	var listRV, cont string
	for {
		page, err := nodes.List(ctx, metav1.ListOptions{Limit: 3, Continue: cont})
		if err != nil {
			return err
		}
		if listRV == "" {
			listRV = page.ResourceVersion
		}
		var names []string
		for _, n := range page.Items {
			names = append(names, n.Name)
		}
		remaining := int64(-1)
		if page.RemainingItemCount != nil {
			remaining = *page.RemainingItemCount
		}
		m.note("nodes page: %v, continues %v, remaining %d, the first page's resourceVersion %v", names, page.Continue != "", remaining, page.ResourceVersion == listRV)
		if cont = page.Continue; cont == "" {
			break
		}
	}

	name := hollow.NodeName(0, 1)
	w, err := nodes.Watch(ctx, metav1.ListOptions{ResourceVersion: listRV, AllowWatchBookmarks: true, TimeoutSeconds: ptr(int64(5)),
		FieldSelector: "metadata.name=" + name})
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"198.19.0.1:51820"}}}`, kilov1alpha1.AnnotationEndpoint)
	patched, err := nodes.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return err
	}
	var seen []string
	bookmarked := false
	for ev := range w.ResultChan() {
		switch n, _ := ev.Object.(*corev1.Node); {
		case ev.Type == watch.Bookmark:
			if !bookmarked {
				seen = append(seen, fmt.Sprintf("BOOKMARK at or after the patch %v", rvNotBefore(n.ResourceVersion, patched.ResourceVersion)))
			}
			bookmarked = true
		case n != nil:
			seen = append(seen, fmt.Sprintf("%s %s endpoint %s", ev.Type, n.Name, n.Annotations[kilov1alpha1.AnnotationEndpoint]))
		default:
			seen = append(seen, string(ev.Type))
		}
	}
	m.note("node watch from the list, timeout 5 s: %v", seen)
	ahead, _ := strconv.ParseUint(patched.ResourceVersion, 10, 64)
	m.note("node watch from a resourceVersion ahead: %s", firstEvent(ctx, m, strconv.FormatUint(ahead+1000000, 10)))
	return nil
}

// firstEvent is the first event of a Node watch from rv.
func firstEvent(ctx context.Context, m *member, rv string) string {
	w, err := m.kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return outcome(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if ev.Type == watch.Error {
			return "ERROR " + outcome(apierrors.FromObject(ev.Object))
		}
		n, _ := ev.Object.(*corev1.Node)
		if n != nil && rvNotBefore(rv, n.ResourceVersion) {
			return string(ev.Type) + " of an older version"
		}
		return string(ev.Type)
	case <-time.After(5 * time.Second):
		return "no event"
	}
}

func rvNotBefore(a, b string) bool {
	return len(a) > len(b) || (len(a) == len(b) && a >= b)
}

func ptr[T any](v T) *T { return &v }
