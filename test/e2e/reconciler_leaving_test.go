//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestLeaving: an entry that leaves a mesh (edited out, or its Secret
// replaced by one for another cluster) leaves nothing of the mesh on the
// departed cluster and nothing of it on the others; what the server cannot
// remove is named with the manual step. The meshes share the clusters'
// nodes, so each subtest deletes its mesh before the next one starts.
func TestLeaving(t *testing.T) {
	rc := startReconcilerEnv(t)
	t.Run("an entry edited out leaves no Peer behind", rc.testEditedOut(false))
	t.Run("an entry edited out with its Secret deleted at once leaves no Peer behind", rc.testEditedOut(true))
	t.Run("a departure whose connection is lost is named with the manual step", rc.testCredentialGone)
	// Last: it moves cluster 2's WireGuard IPs into cluster 1's network.
	t.Run("a Secret replaced by one for another cluster cleans the old one and joins the new one", rc.testRepointed)
}

// leavingMesh creates a mesh of the reconciler's manifest, changed by edit.
func (rc *rcEnv) leavingMesh(t *testing.T, name string, edit func(*meshv1alpha1.ClusterMesh)) *meshv1alpha1.ClusterMesh {
	t.Helper()
	mesh := &meshv1alpha1.ClusterMesh{}
	if err := yaml.Unmarshal([]byte(manifest(t, "reconciler-mesh.yaml", name)), mesh); err != nil {
		t.Fatal(err)
	}
	edit(mesh)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mesh)
	if err != nil {
		t.Fatal(err)
	}
	u, err := rc.meshes().Create(context.Background(), toUnstructured(obj), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ClusterMesh %s: %v", name, err)
	}
	created := &meshv1alpha1.ClusterMesh{}
	fromUnstructured(t, u.Object, created)
	t.Cleanup(func() { rc.deleteAndWait(t, created) })
	return created
}

// deleteAndWait deletes a mesh and waits until it and its Peers are gone
// from the reachable clusters.
func (rc *rcEnv) deleteAndWait(t *testing.T, mesh *meshv1alpha1.ClusterMesh) {
	if err := rc.meshes().Delete(context.Background(), mesh.Name, metav1.DeleteOptions{}); err != nil && rc.mesh(t, mesh.Name) != nil {
		t.Errorf("deleting mesh %s: %v", mesh.Name, err)
	}
	framework.EventuallyT(t, 2*rcDeletionTimeout, "mesh "+mesh.Name+" gone", func() error {
		if rc.mesh(t, mesh.Name) != nil {
			return errors.New("still there")
		}
		return nil
	})
}

// patchSpec applies a JSON patch to a mesh and returns its new generation.
func (rc *rcEnv) patchSpec(t *testing.T, name, patch string) int64 {
	t.Helper()
	u, err := rc.meshes().Patch(context.Background(), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patching mesh %s: %v", name, err)
	}
	return u.GetGeneration()
}

// sourcedFrom names the Peers of mesh on cluster i that stand for entry.
func (rc *rcEnv) sourcedFrom(t *testing.T, i int, mesh *meshv1alpha1.ClusterMesh, entry string) ([]string, error) {
	have, err := rc.peers(t, i, mesh.UID)
	if err != nil {
		return nil, err
	}
	var out []string
	for name, p := range have {
		if p.Labels[planner.LabelSourceCluster] == entry {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// departedDone: the mesh describes generation gen, lists no departure and
// says so; the departed cluster holds no Peer of the mesh, and the others
// (by index) none standing for the departed entry.
func (rc *rcEnv) departedDone(t *testing.T, mesh *meshv1alpha1.ClusterMesh, gen int64, departed int, entry string, others ...int) func() error {
	return func() error {
		m := rc.mesh(t, mesh.Name)
		switch {
		case m == nil:
			return errors.New("the mesh is gone")
		case m.Status.ObservedGeneration < gen:
			return fmt.Errorf("observedGeneration %d < %d", m.Status.ObservedGeneration, gen)
		case len(m.Status.DepartedClusters) > 0:
			return fmt.Errorf("departedClusters %+v", m.Status.DepartedClusters)
		}
		if err := wantCondition(m, meshv1alpha1.ConditionDeparturesComplete, metav1.ConditionTrue, reconciler.ReasonDeparturesComplete); err != nil {
			return err
		}
		left, err := rc.peers(t, departed, mesh.UID)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("the departed cluster %d holds %v", departed, slices.Sorted(maps.Keys(left)))
		}
		for _, i := range others {
			names, err := rc.sourcedFrom(t, i, mesh, entry)
			if err != nil {
				return err
			}
			if len(names) > 0 {
				return fmt.Errorf("cluster %d holds %v of the departed entry %s", i, names, entry)
			}
		}
		return nil
	}
}

func (rc *rcEnv) wantEvent(t *testing.T, mesh, reason, contains string) {
	t.Helper()
	framework.EventuallyT(t, rcConverge, reason+" event", func() error {
		msgs := rc.events(t, mesh, reason)
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, contains) }) {
			return fmt.Errorf("no %s event naming %q: %q", reason, contains, msgs)
		}
		return nil
	})
}

func (rc *rcEnv) testEditedOut(deleteSecret bool) func(t *testing.T) {
	return func(t *testing.T) {
		ctx := context.Background()
		name, secret := "edited", "cluster-2-kubeconfig"
		if deleteSecret {
			name, secret = "edited-nosecret", "leaving-2"
			if _, err := rc.env.CreateKubeconfigSecret(ctx, rc.ns, secret, 2, framework.UserAdmin); err != nil {
				t.Fatal(err)
			}
		}
		mesh := rc.leavingMesh(t, name, func(m *meshv1alpha1.ClusterMesh) {
			m.Spec.Clusters[2].KubeconfigSecretRef.Name = secret
		})
		framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return rc.allMatchView(t, mesh) })
		if names, err := rc.sourcedFrom(t, 0, mesh, clusterName(2)); err != nil || len(names) == 0 {
			t.Fatalf("cluster 0 holds no Peer of cluster-2 before it leaves (%v): the test proves nothing", err)
		}

		gen := rc.patchSpec(t, name, `[{"op":"test","path":"/spec/clusters/2/name","value":"cluster-2"},{"op":"remove","path":"/spec/clusters/2"}]`)
		if deleteSecret {
			if err := rc.kube(framework.HostCluster).CoreV1().Secrets(rc.ns).Delete(ctx, secret, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		took := framework.EventuallyT(t, rcConverge, "nothing of cluster-2 left", rc.departedDone(t, mesh, gen, 2, clusterName(2), 0, 1))
		t.Logf("cluster-2 left in %s", took.Round(time.Millisecond))
		rc.wantEvent(t, name, reconciler.EventClusterDeparted, clusterName(2))
		// The members that stay keep each other's Peers.
		if names, err := rc.sourcedFrom(t, 0, mesh, clusterName(1)); err != nil || len(names) == 0 {
			t.Errorf("cluster 0 lost cluster-1's Peers: %v %v", names, err)
		}
	}
}

func (rc *rcEnv) testRepointed(t *testing.T) {
	ctx := context.Background()
	const name, secret = "repointed", "moving"
	if _, err := rc.env.CreateKubeconfigSecret(ctx, rc.ns, secret, 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	mesh := rc.leavingMesh(t, name, func(m *meshv1alpha1.ClusterMesh) {
		// Two members: cluster 0 and the entry that moves from cluster 1 to 2.
		m.Spec.Clusters = m.Spec.Clusters[:2]
		m.Spec.Clusters[1].KubeconfigSecretRef.Name = secret
		m.Spec.Clusters[1].PodCIDRs = []string{"10.11.0.0/16", "10.12.0.0/16"}
	})
	framework.EventuallyT(t, rcConverge, "Peers on cluster 1", func() error {
		have, err := rc.peers(t, 1, mesh.UID)
		if err == nil && len(have) == 0 {
			err = errors.New("none yet")
		}
		return err
	})

	// The entry's networks fit the new cluster too: nothing of it is
	// withheld (a withheld group keeps the Peer it had).
	for node, ip := range map[string]string{"c2-a1": "10.41.0.11/16", "c2-b1": "10.41.0.12/16"} {
		if err := rc.env.AnnotateNode(ctx, 2, node, map[string]string{kilov1alpha1.AnnotationWireGuardIP: ip}); err != nil {
			t.Fatal(err)
		}
	}
	secrets := rc.kube(framework.HostCluster).CoreV1().Secrets(rc.ns)
	s, err := secrets.Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["kubeconfig"] = rc.env.KubeconfigBytes(2, framework.UserAdmin)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := rc.mesh(t, name)
	took := framework.EventuallyT(t, rcConverge, "cluster 1 cleaned, cluster 2 joined", func() error {
		if err := rc.departedDone(t, mesh, m.Generation, 1, "", 0)(); err != nil {
			return err
		}
		joined, err := rc.peers(t, 2, mesh.UID)
		if err != nil {
			return err
		}
		if len(joined) == 0 {
			return errors.New("cluster 2 holds no Peer of the mesh")
		}
		have, err := rc.peers(t, 0, mesh.UID)
		if err != nil {
			return err
		}
		for _, p := range have {
			if slices.Contains(slices.Collect(maps.Values(rc.keys[1])), p.Spec.PublicKey) {
				carried := meta.FindStatusCondition(rc.mesh(t, name).Status.Conditions, meshv1alpha1.ConditionPeersCarried)
				return fmt.Errorf("cluster 0 still holds Peer %s with a key of cluster 1 (PeersCarried: %+v)", p.Name, carried)
			}
		}
		return nil
	})
	t.Logf("repointed in %s", took.Round(time.Millisecond))
	rc.wantEvent(t, name, reconciler.EventClusterDeparted, clusterName(1))
}

// testCredentialGone: the departed cluster is unreachable when its entry
// and Secret go, and the server restarts before it answers again: the
// server holds no connection any more and says so, with the manual step;
// the others lose the departed cluster's Peers all the same, and nothing
// else.
func (rc *rcEnv) testCredentialGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const name, secret = "stuck", "doomed"
	if _, err := rc.env.CreateKubeconfigSecret(ctx, rc.ns, secret, 2, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	mesh := rc.leavingMesh(t, name, func(m *meshv1alpha1.ClusterMesh) {
		m.Spec.Clusters[2].KubeconfigSecretRef.Name = secret
	})
	framework.EventuallyT(t, rcConverge, "Peers as the view shows", func() error { return rc.allMatchView(t, mesh) })
	onDeparted, err := rc.peers(t, 2, mesh.UID)
	if err != nil || len(onDeparted) == 0 {
		t.Fatalf("cluster 2 holds no Peer of the mesh (%v): the test proves nothing", err)
	}

	if err := rc.env.StopCluster(2); err != nil {
		t.Fatal(err)
	}
	startedAgain := false
	defer func() {
		if !startedAgain {
			if err := rc.env.StartCluster(context.Background(), 2); err != nil {
				t.Error(err)
			}
		}
	}()
	gen := rc.patchSpec(t, name, `[{"op":"test","path":"/spec/clusters/2/name","value":"cluster-2"},{"op":"remove","path":"/spec/clusters/2"}]`)
	if err := rc.kube(framework.HostCluster).CoreV1().Secrets(rc.ns).Delete(ctx, secret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	item := func(reason string) func() error {
		return func() error {
			m := rc.mesh(t, name)
			if m == nil || m.Status.ObservedGeneration < gen {
				return errors.New("the edit is not observed yet")
			}
			if len(m.Status.DepartedClusters) != 1 || m.Status.DepartedClusters[0].Name != clusterName(2) || m.Status.DepartedClusters[0].Reason != reason {
				return fmt.Errorf("departedClusters %+v, want cluster-2 %s", m.Status.DepartedClusters, reason)
			}
			return wantCondition(m, meshv1alpha1.ConditionDeparturesComplete, metav1.ConditionFalse, reason)
		}
	}
	framework.EventuallyT(t, rcConverge, "the departure recorded", item(meshv1alpha1.DepartureRemoving))

	if err := rc.server.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := rc.server.Start(ctx); err != nil {
		t.Fatalf("restarting the server: %v\n%s", err, rc.server.LogTail(40))
	}
	framework.EventuallyT(t, 2*rcConverge, "CredentialGone", item(meshv1alpha1.DepartureCredentialGone))
	m := rc.mesh(t, name)
	step := "kubectl delete peers.kilo.squat.ai -l " + planner.LabelMeshUID + "=" + string(mesh.UID)
	if msg := m.Status.DepartedClusters[0].Message; !strings.Contains(msg, step) {
		t.Errorf("the item's message lacks the manual step %q: %q", step, msg)
	}
	rc.wantEvent(t, name, reconciler.EventDepartureStuck, step)
	framework.EventuallyT(t, rcConverge, "the others hold no Peer of cluster-2", func() error {
		for _, i := range []int{0, 1} {
			if names, err := rc.sourcedFrom(t, i, mesh, clusterName(2)); err != nil || len(names) > 0 {
				return fmt.Errorf("cluster %d: %v %v", i, names, err)
			}
		}
		return nil
	})
	if names, err := rc.sourcedFrom(t, 0, mesh, clusterName(1)); err != nil || len(names) == 0 {
		t.Errorf("cluster 0 lost cluster-1's Peers: %v %v", names, err)
	}

	// Back, the departed cluster still holds what nobody could remove; the
	// manual step removes it and clears the item.
	if err := rc.env.StartCluster(ctx, 2); err != nil {
		t.Fatal(err)
	}
	startedAgain = true
	left, err := rc.peers(t, 2, mesh.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != len(onDeparted) {
		t.Errorf("cluster 2 holds %d Peers of the mesh after the restart, it held %d", len(left), len(onDeparted))
	}
	if err := rc.dyn(2).Resource(kilov1alpha1.PeerResource).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + string(mesh.UID)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.meshes().Patch(ctx, name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/status/departedClusters/0"}]`),
		metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("removing the item by hand: %v", err)
	}
	framework.EventuallyT(t, rcConverge, "DeparturesComplete", func() error {
		return wantCondition(rc.mesh(t, name), meshv1alpha1.ConditionDeparturesComplete, metav1.ConditionTrue, reconciler.ReasonDeparturesComplete)
	})
}
