//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// peers lists the Peers of cluster i, by name; with a mesh UID only those
// the mesh manages.
func (rc *rcEnv) peers(t *testing.T, i int, meshUID types.UID) (map[string]*kilov1alpha1.Peer, error) {
	t.Helper()
	opts := metav1.ListOptions{}
	if meshUID != "" {
		opts.LabelSelector = planner.LabelMeshUID + "=" + string(meshUID)
	}
	list, err := rc.dyn(i).Resource(kilov1alpha1.PeerResource).List(context.Background(), opts)
	if err != nil {
		return nil, fmt.Errorf("listing Peers of cluster %d: %w", i, err)
	}
	out := map[string]*kilov1alpha1.Peer{}
	for _, u := range list.Items {
		p := &kilov1alpha1.Peer{}
		fromUnstructured(t, u.Object, p)
		out[p.Name] = p
	}
	return out, nil
}

// view is the peers view of one cluster: the Peers the plan puts there.
func (rc *rcEnv) view(t *testing.T, mesh string, i int) ([]kilov1alpha1.Peer, error) {
	t.Helper()
	raw, err := rc.kube(framework.HostCluster).Discovery().RESTClient().Get().
		AbsPath("/apis", framework.MeshGroup, framework.MeshVersion, "namespaces", rc.ns, "clustermeshes", mesh, "peers").
		Param("cluster", clusterName(i)).DoRaw(context.Background())
	if err != nil {
		return nil, fmt.Errorf("peers view of %s: %w", clusterName(i), err)
	}
	// The view renders what kubectl apply takes: a v1 List, in JSON here
	// (the client accepts it first), which reads as YAML too.
	var list kilov1alpha1.PeerList
	if err := yaml.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("peers view of %s: %w", clusterName(i), err)
	}
	return list.Items, nil
}

// matchesView checks that cluster i holds exactly the managed Peers the
// view shows, with the view's labels and spec.
func (rc *rcEnv) matchesView(t *testing.T, mesh *meshv1alpha1.ClusterMesh, i int) error {
	t.Helper()
	want, err := rc.view(t, mesh.Name, i)
	if err != nil {
		return err
	}
	have, err := rc.peers(t, i, mesh.UID)
	if err != nil {
		return err
	}
	var problems []string
	for _, w := range want {
		h := have[w.Name]
		if h == nil {
			problems = append(problems, "missing "+w.Name)
			continue
		}
		if !equalSpec(h.Spec, w.Spec) {
			problems = append(problems, fmt.Sprintf("%s: spec %+v, want %+v", w.Name, h.Spec, w.Spec))
		}
		for k, v := range w.Labels {
			if h.Labels[k] != v {
				problems = append(problems, fmt.Sprintf("%s: label %s=%q, want %q", w.Name, k, h.Labels[k], v))
			}
		}
	}
	for name := range have {
		if !slices.ContainsFunc(want, func(p kilov1alpha1.Peer) bool { return p.Name == name }) {
			problems = append(problems, "unexpected "+name)
		}
	}
	if len(want) == 0 {
		problems = append(problems, "the view shows no Peers")
	}
	if len(problems) > 0 {
		return fmt.Errorf("cluster %d: %s", i, strings.Join(problems, "; "))
	}
	return nil
}

func equalSpec(a, b kilov1alpha1.PeerSpec) bool {
	return slices.Equal(a.AllowedIPs, b.AllowedIPs) && a.PublicKey == b.PublicKey &&
		a.PersistentKeepalive == b.PersistentKeepalive && a.PresharedKey == b.PresharedKey &&
		(a.Endpoint == nil) == (b.Endpoint == nil) && (a.Endpoint == nil || *a.Endpoint == *b.Endpoint)
}

// peerOf fetches the Peer representing group of source cluster src on
// cluster i.
func (rc *rcEnv) peerOf(t *testing.T, mesh *meshv1alpha1.ClusterMesh, i, src int, group string) (*kilov1alpha1.Peer, error) {
	t.Helper()
	name := planner.PeerName(rc.ns, mesh.Name, clusterName(src), group)
	u, err := rc.dyn(i).Resource(kilov1alpha1.PeerResource).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	p := &kilov1alpha1.Peer{}
	fromUnstructured(t, u.Object, p)
	return p, nil
}

func (rc *rcEnv) allMatchView(t *testing.T, mesh *meshv1alpha1.ClusterMesh, clusters ...int) error {
	if len(clusters) == 0 {
		clusters = []int{0, 1, 2}
	}
	var errs []error
	for _, i := range clusters {
		errs = append(errs, rc.matchesView(t, mesh, i))
	}
	return errors.Join(errs...)
}

func (rc *rcEnv) createForeignPeer(t *testing.T, i int, name, cidr string) *kilov1alpha1.Peer {
	t.Helper()
	_, key, err := framework.NewWireGuardKey()
	if err != nil {
		t.Fatal(err)
	}
	p := &kilov1alpha1.Peer{
		TypeMeta:   metav1.TypeMeta{APIVersion: kilov1alpha1.SchemeGroupVersion.String(), Kind: kilov1alpha1.PeerKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "someone-else"}},
		Spec:       kilov1alpha1.PeerSpec{AllowedIPs: []string{cidr}, PublicKey: key},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	u, err := rc.dyn(i).Resource(kilov1alpha1.PeerResource).Create(context.Background(), toUnstructured(obj), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating foreign Peer %s on cluster %d: %v", name, i, err)
	}
	out := &kilov1alpha1.Peer{}
	fromUnstructured(t, u.Object, out)
	return out
}

// unchanged checks that Peers are exactly as they were (same object, same
// version).
func (rc *rcEnv) unchanged(t *testing.T, i int, want map[string]*kilov1alpha1.Peer) error {
	t.Helper()
	have, err := rc.peers(t, i, "")
	if err != nil {
		return err
	}
	for name, w := range want {
		h := have[name]
		switch {
		case h == nil:
			return fmt.Errorf("cluster %d: Peer %s was deleted", i, name)
		case h.UID != w.UID || h.ResourceVersion != w.ResourceVersion:
			return fmt.Errorf("cluster %d: Peer %s was replaced or changed (uid %s->%s, resourceVersion %s->%s)",
				i, name, w.UID, h.UID, w.ResourceVersion, h.ResourceVersion)
		}
	}
	return nil
}
