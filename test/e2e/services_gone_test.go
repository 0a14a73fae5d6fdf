//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testDeletedWithoutFinalizer: svc leaves storage without its finalizer
// having run (its key removed from etcd while the server runs, as a mesh
// whose finalizer a tenant removed leaves): its imports, derived Services,
// slices and Peers leave both members all the same.
func (s *svcEnv) testDeletedWithoutFinalizer(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	s.exportedToBoth(t, ns, "drawer", "10.11.1.92")
	m, err := s.mesh()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.env.EtcdDelete(context.Background(), s.meshKey()); err != nil {
		t.Fatal(err)
	}
	s.awaitMeshGone(t)
	s.recreateAfter(t, ns, "drawer")
	for _, c := range []int{1, 2} {
		framework.EventuallyT(t, svcConverge, fmt.Sprintf("nothing of the deleted mesh on cluster %d", c), func() error {
			return s.leftNothing(c, m.UID, true)
		})
	}
}

// testGoneWhileStopped: svc is deleted while no replica of the server
// runs (its key removed from etcd with the server stopped). Nothing in any
// memory knows it was there; another mesh, without services, keeps the
// connections to both members. Its imports, derived Services, slices and
// Peers go all the same, found by the installation they carry, once
// storage says the mesh is gone.
func (s *svcEnv) testGoneWhileStopped(t *testing.T) {
	ns := s.namespace(t, 1, 2)
	s.exportedToBoth(t, ns, "relic", "10.11.1.94")
	m, err := s.mesh()
	if err != nil {
		t.Fatal(err)
	}
	s.keeperMesh(t)

	s.deleteWhileStopped(t)
	s.recreateAfter(t, ns, "relic")
	for _, c := range []int{1, 2} {
		took := framework.EventuallyT(t, 2*time.Minute, fmt.Sprintf("nothing of the mesh gone while stopped on cluster %d", c), func() error {
			return s.leftNothing(c, m.UID, true)
		})
		t.Logf("cluster %d: nothing of the mesh %s after the restart", c, took.Round(time.Millisecond))
	}
}

// testGoneWhileMemberDown: svc is deleted while no replica runs and while
// cluster 2 is down, which comes back only after the server's first sweep
// period: cluster 1 is cleaned by the sweep at the start, cluster 2 by a
// later period's sweep, services objects and Peers alike.
func (s *svcEnv) testGoneWhileMemberDown(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, 1, 2)
	s.exportedToBoth(t, ns, "fossil", "10.11.1.96")
	m, err := s.mesh()
	if err != nil {
		t.Fatal(err)
	}
	s.keeperMesh(t)
	s.recreateAfter(t, ns, "fossil")

	if err := s.env.StopCluster(2); err != nil {
		t.Fatal(err)
	}
	down := true
	t.Cleanup(func() {
		if down {
			if err := s.env.StartCluster(ctx, 2); err != nil {
				t.Error(err)
			}
		}
	})
	started := s.deleteWhileStopped(t)
	framework.EventuallyT(t, 2*time.Minute, "nothing of the mesh on cluster 1, swept at the start", func() error {
		return s.leftNothing(1, m.UID, true)
	})

	time.Sleep(time.Until(started.Add(reconciler.OrphanSweepPeriod + 5*time.Second)))
	if err := s.env.StartCluster(ctx, 2); err != nil {
		t.Fatal(err)
	}
	down = false
	back := time.Now()
	framework.EventuallyT(t, 2*reconciler.OrphanSweepPeriod+svcConverge, "nothing of the mesh on cluster 2, swept at a later period", func() error {
		return s.leftNothing(2, m.UID, true)
	})
	t.Logf("cluster 2: nothing of the mesh %s after it came back", time.Since(back).Round(time.Millisecond))
}

// deleteWhileStopped removes svc from storage while the server is
// stopped, starts the server again and waits until it says svc does not
// exist; it returns when the server started.
func (s *svcEnv) deleteWhileStopped(t *testing.T) time.Time {
	t.Helper()
	ctx := context.Background()
	if err := s.server.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.env.EtcdDelete(ctx, s.meshKey()); err != nil {
		t.Fatal(err)
	}
	restart, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.server.Start(restart); err != nil {
		t.Fatalf("restart: %v\n%s", err, s.server.LogTail(40))
	}
	started := time.Now()
	s.awaitMeshGone(t)
	return started
}

// keeperMesh creates, in a namespace of its own, mesh keeper joining
// clusters 1 and 2 without services, until the test ends, and waits until
// the server reads both.
func (s *svcEnv) keeperMesh(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns, err := s.env.NewNamespace(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.env.CreateKubeconfigSecret(ctx, ns, "one-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	if err := s.env.CreateMemberSecret(ctx, 2, ns, "two-kubeconfig", framework.MemberServices); err != nil {
		t.Fatal(err)
	}
	manifest := strings.Replace(strings.Replace(svcMesh, "name: svc", "name: keeper", 1), "  multiClusterServices: Enabled\n", "", 1)
	s.env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, manifest, "-n", ns, "create", "-f", "-")
	t.Cleanup(func() {
		s.env.KubectlT(t, framework.HostCluster, framework.UserAdmin, "-n", ns, "delete", "clustermesh", "keeper")
	})
	framework.EventuallyT(t, svcConverge, "keeper reading both members", func() error {
		m, err := s.meshIn(ns, "keeper")
		if err != nil {
			return err
		}
		reached := 0
		for _, c := range m.Status.Clusters {
			if c.Reachable {
				reached++
			}
		}
		if reached != 2 {
			return fmt.Errorf("clusters %+v", m.Status.Clusters)
		}
		return nil
	})
}

// meshKey is svc's key in the server's etcd.
func (s *svcEnv) meshKey() string {
	return s.server.EtcdPrefix + "/mesh.kilo.squat.ai/clustermeshes/" + s.ns + "/svc"
}

// awaitMeshGone waits until the server says svc does not exist.
func (s *svcEnv) awaitMeshGone(t *testing.T) {
	t.Helper()
	framework.EventuallyT(t, svcConverge, "svc gone", func() error {
		_, err := s.mesh()
		switch {
		case err == nil:
			return errors.New("still there")
		case !apierrors.IsNotFound(err):
			return err
		}
		return nil
	})
}

// recreateAfter creates svc again once the test ends, and waits for its
// import of ns/name in cluster 2 before unexporting it.
func (s *svcEnv) recreateAfter(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		s.env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, svcMesh, "-n", s.ns, "create", "-f", "-")
		s.waitImported(t, 2, ns, name)
		s.unexport(t, 1, ns, name)
	})
}

// leftNothing is nil when cluster holds no ServiceImport, Service or
// EndpointSlice labelled with the mesh UID uid, nor, with peers, a Peer.
func (s *svcEnv) leftNothing(cluster int, uid types.UID, peers bool) error {
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + string(uid)}
	var left []string
	imports, err := s.mcs(cluster).MulticlusterV1beta1().ServiceImports(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, o := range imports.Items {
		left = append(left, "ServiceImport "+o.Namespace+"/"+o.Name)
	}
	svcs, err := s.kube(cluster).CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, o := range svcs.Items {
		left = append(left, "Service "+o.Namespace+"/"+o.Name)
	}
	slices, err := s.kube(cluster).DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, o := range slices.Items {
		left = append(left, "EndpointSlice "+o.Namespace+"/"+o.Name)
	}
	if peers {
		list, err := s.env.Dynamic(cluster, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(ctx, opts)
		if err != nil {
			return err
		}
		for _, o := range list.Items {
			left = append(left, "Peer "+o.GetName())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left: %s", strings.Join(left, ", "))
	}
	return nil
}
