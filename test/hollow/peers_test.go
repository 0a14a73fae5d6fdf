//go:build e2e

package hollow

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// fieldManager is the server's (pkg/reconciler.FieldManager).
const fieldManager = "kilo-mesh-apiserver"

const meshLabel = "mesh.kilo.squat.ai/mesh-uid"

// peer is a Peer as the reconciler applies it.
func peer(name, key, endpoint, uid string) *unstructured.Unstructured {
	spec := map[string]any{"allowedIPs": []any{"10.8.0.0/24"}, "publicKey": key}
	if endpoint != "" {
		spec["endpoint"] = map[string]any{"dnsOrIP": map[string]any{"ip": endpoint}, "port": int64(51820)}
	}
	md := map[string]any{"name": name, "labels": map[string]any{meshLabel: "fidelity"}}
	if uid != "" {
		md["uid"] = uid
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kilov1alpha1.SchemeGroupVersion.String(), "kind": kilov1alpha1.PeerKind, "metadata": md, "spec": spec,
	}}
}

func describe(u *unstructured.Unstructured) string {
	if u == nil {
		return "nothing"
	}
	key, _, _ := unstructured.NestedString(u.Object, "spec", "publicKey")
	ip, _, _ := unstructured.NestedString(u.Object, "spec", "endpoint", "dnsOrIP", "ip")
	return fmt.Sprintf("generation %d, label %q, key %s, endpoint %q", u.GetGeneration(), u.GetLabels()[meshLabel], key, ip)
}

// peerWrites: the reconciler's server-side applies (new, unchanged, with
// the UID and force), its updates and deletions with preconditions, and
// the departures' labelled list.
func peerWrites(ctx context.Context, m *member) error {
	apply := func(u *unstructured.Unstructured, force bool) (*unstructured.Unstructured, error) {
		return m.peers.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: fieldManager, Force: force})
	}
	a, err := apply(peer("fid-a", "k1", "198.19.0.1", ""), false)
	m.note("apply a new Peer: %s, %s", outcome(err), describe(a))
	if err != nil {
		return nil
	}
	again, err := apply(peer("fid-a", "k1", "198.19.0.1", ""), false)
	m.note("apply it unchanged: %s, resourceVersion kept %v", outcome(err), err == nil && again.GetResourceVersion() == a.GetResourceVersion())
	moved, err := apply(peer("fid-a", "k1", "198.19.0.2", string(a.GetUID())), true)
	m.note("apply a change with its UID, forced: %s, %s, resourceVersion moved %v", outcome(err), describe(moved), err == nil && moved.GetResourceVersion() != a.GetResourceVersion())
	_, err = apply(peer("fid-a", "k1", "198.19.0.3", "00000000-0000-0000-0000-000000000000"), true)
	m.note("apply with another UID, forced: %s", outcome(err))

	other := peer("fid-b", "theirs", "", "")
	_, err = m.peers.Create(ctx, other, metav1.CreateOptions{FieldManager: "kubectl-create"})
	m.note("another manager creates a Peer: %s", outcome(err))
	same, err := apply(peer("fid-b", "theirs", "", ""), false)
	m.note("apply the same values over it: %s, %s", outcome(err), describe(same))
	_, err = apply(peer("fid-b", "ours", "", ""), false)
	m.note("apply other values over it without force: %s", outcome(err))
	taken, err := apply(peer("fid-b", "ours", "", ""), true)
	m.note("apply other values over it with force: %s, %s", outcome(err), describe(taken))

	live, err := m.peers.Get(ctx, "fid-a", metav1.GetOptions{})
	if err != nil {
		return err
	}
	stale := live.DeepCopy()
	unstructured.RemoveNestedField(live.Object, "spec", "endpoint")
	updated, err := m.peers.Update(ctx, live, metav1.UpdateOptions{FieldManager: fieldManager})
	m.note("update at its resourceVersion without the endpoint: %s, %s", outcome(err), describe(updated))
	_, err = m.peers.Update(ctx, stale, metav1.UpdateOptions{FieldManager: fieldManager})
	m.note("update at a stale resourceVersion: %s", outcome(err))

	list, err := m.peers.List(ctx, metav1.ListOptions{LabelSelector: meshLabel + "=fidelity", Limit: 500})
	var names []string
	if err == nil {
		for _, p := range list.Items {
			names = append(names, p.GetName())
		}
	}
	m.note("list by the mesh's label: %s %v", outcome(err), names)

	wrong := types.UID("00000000-0000-0000-0000-000000000000")
	err = m.peers.Delete(ctx, "fid-a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	m.note("delete with another UID: %s", outcome(err))
	uid := a.GetUID()
	err = m.peers.Delete(ctx, "fid-a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	m.note("delete with its UID: %s", outcome(err))
	err = m.peers.Delete(ctx, "fid-a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	m.note("delete it again: %s", outcome(err))
	_, err = apply(peer("fid-a", "k1", "198.19.0.4", string(uid)), true)
	m.note("apply the deleted Peer with its old UID, forced: %s", outcome(err))
	_ = m.peers.Delete(ctx, "fid-b", metav1.DeleteOptions{})
	return nil
}

// peerWatch: the Peer informer's list and watch (typed, JSON), through an
// apply that creates, one that changes, and a deletion.
func peerWatch(ctx context.Context, m *member) error {
	params := runtime.NewParameterCodec(peerScheme())
	var list kilov1alpha1.PeerList
	if err := m.peerRead.Get().Resource("peers").VersionedParams(&metav1.ListOptions{Limit: 500}, params).Do(ctx).Into(&list); err != nil {
		return err
	}
	opts := &metav1.ListOptions{Watch: true, ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: ptr(int64(30))}
	w, err := m.peerRead.Get().Resource("peers").VersionedParams(opts, params).Watch(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	opt := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if _, err := m.peers.Apply(ctx, "fid-c", peer("fid-c", "k", "198.19.1.1", ""), opt); err != nil {
		return err
	}
	if _, err := m.peers.Apply(ctx, "fid-c", peer("fid-c", "k", "198.19.1.2", ""), opt); err != nil {
		return err
	}
	if err := m.peers.Delete(ctx, "fid-c", metav1.DeleteOptions{}); err != nil {
		return err
	}
	var seen []string
	timeout := time.After(15 * time.Second)
	for len(seen) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				seen = append(seen, "closed")
				m.note("Peer watch: %v", seen)
				return nil
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			p, _ := ev.Object.(*kilov1alpha1.Peer)
			ip := ""
			if p != nil && p.Spec.Endpoint != nil {
				ip = p.Spec.Endpoint.DNSOrIP.IP
			}
			seen = append(seen, fmt.Sprintf("%s %T %s", ev.Type, ev.Object, ip))
		case <-timeout:
			seen = append(seen, "no more events")
			m.note("Peer watch: %v", seen)
			return nil
		}
	}
	m.note("Peer watch: %v", seen)
	return nil
}

func peerScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = kilov1alpha1.AddToScheme(s)
	return s
}
