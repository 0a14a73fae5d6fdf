//go:build e2e

package install

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestUninstallKeepsData: no rendering of the server's install holds its
// namespace, every StatefulSet keeps its volumes when deleted or scaled
// down, and the chart keeps the etcd certificates on uninstall; on a real
// kube-apiserver with its controller manager, `kubectl delete -k` and
// `helm uninstall` leave the store's volumes and Secrets, and a reinstall
// finds every mesh with its status.
func TestUninstallKeepsData(t *testing.T) {
	t.Run("renderings", func(t *testing.T) {
		ctx := testContext(t, 2*time.Minute)
		for _, r := range renderings(t) {
			if strings.Contains(r.name, "member") {
				continue // the member identity, whose namespace holds no data
			}
			for _, u := range decode(t, render(t, ctx, r)) {
				switch {
				case u.GetKind() == "Namespace":
					t.Errorf("%s renders the Namespace %s: deleting the install would delete the data", r.name, u.GetName())
				case u.GetKind() == "StatefulSet":
					policy, _, _ := unstructured.NestedStringMap(u.Object, "spec", "persistentVolumeClaimRetentionPolicy")
					if policy["whenDeleted"] != "Retain" || policy["whenScaled"] != "Retain" {
						t.Errorf("%s: StatefulSet %s's volume retention is %v, want Retain on deletion and scale-down", r.name, u.GetName(), policy)
					}
				case u.GetKind() == "Secret" && strings.HasPrefix(u.GetName(), "kilo-mesh-etcd-"):
					if u.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
						t.Errorf("%s: Secret %s is not kept by helm uninstall", r.name, u.GetName())
					}
				}
			}
		}
	})
	t.Run("kustomize default", func(t *testing.T) {
		root, err := framework.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		deploy := filepath.Join(root, "artifacts", "deploy")
		testUninstall(t, uninstallWay{
			install:   [][]string{{"apply", "-k", filepath.Join(root, "artifacts", "namespace")}, {"apply", "-k", deploy}},
			uninstall: [][]string{{"delete", "-k", deploy, "--wait"}},
		})
	})
	t.Run("helm default", func(t *testing.T) {
		root, err := framework.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		testUninstall(t, uninstallWay{
			helm: true,
			install: [][]string{{"install", "kilo-mesh", filepath.Join(root, "artifacts", "charts", "kilo-mesh-apiserver"),
				"-n", framework.MeshNamespace, "--create-namespace"}},
			uninstall: [][]string{{"uninstall", "kilo-mesh", "-n", framework.MeshNamespace, "--wait"}},
		})
	})
	t.Run("helm ha", testHelmUninstall)
}

// uninstallWay is one way to install the default mode, and to uninstall it.
type uninstallWay struct {
	install, uninstall [][]string // kubectl or helm commands
	helm               bool
}

func (w uninstallWay) run(t *testing.T, ctx context.Context, commands [][]string) {
	t.Helper()
	run := env.Kubectl
	if w.helm {
		run = env.Helm
	}
	for _, args := range commands {
		if out, stderr, err := run(ctx, framework.HostCluster, admin, args...); err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, stderr)
		}
	}
}

// testUninstall installs the default mode for real; the image's server,
// run on the directory of the PersistentVolume bound to the StatefulSet's
// claim, stands in for its pod. After the uninstall and a reinstall, the
// namespace and the claim are the same, and the server finds its mesh as
// it was and writes none of its Peers.
func testUninstall(t *testing.T, way uninstallWay) {
	ctx := testContext(t, 4*time.Minute)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	deploy := filepath.Join(root, "artifacts", "deploy")
	host := env.Client(framework.HostCluster, admin)
	// The framework's own objects of the same names make way for the install's.
	uninstallKustomize(t, deploy)
	way.run(t, ctx, way.install)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if way.helm {
			env.Helm(ctx, framework.HostCluster, admin, "uninstall", "kilo-mesh", "-n", framework.MeshNamespace, "--ignore-not-found")
		}
		uninstallKustomize(t, deploy)
	})
	nsBefore, err := host.CoreV1().Namespaces().Get(ctx, framework.MeshNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvDir := t.TempDir()
	claim := bindClaim(t, ctx, "data-kilo-mesh-apiserver-0", pvDir)
	dataDir := filepath.Join(pvDir, "etcd")

	// The server in place of the pod; the Service that would reach the pod
	// makes way for the framework's, which reaches the process.
	serve := func() *framework.MeshServer {
		env.KubectlT(t, framework.HostCluster, admin, "-n", framework.MeshNamespace, "delete", "service", framework.MeshServiceName, "--ignore-not-found")
		return startServer(t, framework.MeshServerOptions{SelfManagedCert: true, DataDir: dataDir})
	}
	server := serve()
	ensureSmokeNodes(t, ctx)
	fresh, stopFresh := context.WithCancel(ctx)
	defer stopFresh()
	go env.KeepKiloNodesFresh(fresh, 15*time.Second)
	meshes := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR)
	smoke := createMesh(t, ctx, func(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return meshes.Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	})
	ns := smoke.GetNamespace()
	waitConverged(t, ctx, server)
	before := readStore(t, ctx, ns)
	if c := before["mesh "+ns+"/smoke"]; !strings.Contains(c, "Ready=True") {
		t.Fatalf("the mesh before the uninstall: %s", c)
	}
	watches := []*peerWatch{watchPeers(t, ctx, 0, string(smoke.GetUID())), watchPeers(t, ctx, 1, string(smoke.GetUID()))}

	// The uninstall: the pod goes with the StatefulSet (the server stops),
	// then everything the mode rendered.
	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	way.run(t, ctx, way.uninstall)
	// The garbage collector has handled the StatefulSet once its pod is gone.
	err = framework.Eventually(ctx, 250*time.Millisecond, time.Minute, func(ctx context.Context) error {
		_, err := host.CoreV1().Pods(framework.MeshNamespace).Get(ctx, "kilo-mesh-apiserver-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the StatefulSet's pod is still there: %v", err)
	})
	if err != nil {
		t.Fatal(err)
	}
	nsAfter, err := host.CoreV1().Namespaces().Get(ctx, framework.MeshNamespace, metav1.GetOptions{})
	if err != nil || nsAfter.UID != nsBefore.UID || nsAfter.DeletionTimestamp != nil {
		t.Fatalf("the namespace after the uninstall: %v (UID %s, was %s)", err, nsAfter.UID, nsBefore.UID)
	}
	if c, err := host.CoreV1().PersistentVolumeClaims(framework.MeshNamespace).Get(ctx, claim.Name, metav1.GetOptions{}); err != nil || c.UID != claim.UID || c.DeletionTimestamp != nil {
		t.Fatalf("the store's claim after the uninstall: %v", err)
	}

	// The reinstall adopts the same claim; the server finds the mesh as it
	// was and, the namespace being the same installation, takes its Peers
	// as they are.
	way.run(t, ctx, way.install)
	if again := bindClaim(t, ctx, claim.Name, pvDir); again.UID != claim.UID {
		t.Fatalf("the reinstall made a new claim")
	}
	server = serve()
	restored(t, ctx, server, ns, "smoke", before)
	for _, w := range watches {
		if got := w.stop(); len(got) != 0 {
			t.Errorf("cluster %d: Peer events across the uninstall and the reinstall: %v", w.cluster, got)
		}
	}
	deleteMesh(t, ctx, ns, "smoke")
}

// uninstallKustomize removes the kustomize install and its data, with the
// commands of docs/install.md's "Delete the data" (the namespace aside,
// which the other tests share).
func uninstallKustomize(t *testing.T, deploy string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"delete", "-k", deploy, "--ignore-not-found"},
		{"-n", framework.MeshNamespace, "delete", "pvc", "-l", "app.kubernetes.io/part-of=kilo-mesh", "--ignore-not-found"},
		{"delete", "pv", "-l", "kilo-mesh-test=uninstall", "--ignore-not-found"},
	} {
		if _, stderr, err := env.Kubectl(ctx, framework.HostCluster, admin, args...); err != nil {
			t.Errorf("kubectl %v: %v\n%s", args, err, stderr)
		}
	}
}

// bindClaim waits for the StatefulSet's claim and binds it to a
// PersistentVolume on dir, which the test's server uses as the pod would.
func bindClaim(t *testing.T, ctx context.Context, name, dir string) *corev1.PersistentVolumeClaim {
	t.Helper()
	host := env.Client(framework.HostCluster, admin)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "kilo-mesh-test-" + name, Labels: map[string]string{"kilo-mesh-test": "uninstall"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: framework.MeshNamespace, Name: name},
		},
	}
	if _, err := host.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var claim *corev1.PersistentVolumeClaim
	err := framework.Eventually(ctx, 250*time.Millisecond, time.Minute, func(ctx context.Context) error {
		c, err := host.CoreV1().PersistentVolumeClaims(framework.MeshNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound || c.Spec.VolumeName != pv.Name {
			return fmt.Errorf("claim %s is %s on %q", name, c.Status.Phase, c.Spec.VolumeName)
		}
		claim = c
		return nil
	})
	if err != nil {
		t.Fatalf("the StatefulSet's claim: %v", err)
	}
	return claim
}

// ensureSmokeNodes creates the smoke mesh's nodes unless an earlier test did.
func ensureSmokeNodes(t *testing.T, ctx context.Context) {
	t.Helper()
	for i := range 2 {
		if _, err := env.CreateKiloNode(ctx, i, smokeNode(i)); err != nil && !apierrors.IsAlreadyExists(err) && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
}

// condition is the status condition typ of a mesh, nil when absent.
func condition(mesh *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(mesh.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// testHelmUninstall: helm uninstall of the HA mode keeps the etcd members'
// volumes and certificates, and installing the same release again adopts
// them unchanged.
func testHelmUninstall(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, "artifacts", "charts", "kilo-mesh-apiserver")
	host := env.Client(framework.HostCluster, admin)
	// The framework's own objects of the same names would stop Helm from
	// owning them; later tests apply them again.
	uninstallKustomize(t, filepath.Join(root, "artifacts", "deploy"))
	helm := func(args ...string) {
		t.Helper()
		if out, stderr, err := env.Helm(ctx, framework.HostCluster, admin, args...); err != nil {
			t.Fatalf("helm %v: %v\n%s%s", args, err, out, stderr)
		}
	}
	install := []string{"install", "kilo-mesh", chart, "-n", framework.MeshNamespace, "--create-namespace", "--set", "ha.enabled=true"}
	helm(install...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		env.Helm(ctx, framework.HostCluster, admin, "uninstall", "kilo-mesh", "-n", framework.MeshNamespace, "--ignore-not-found")
		// docs/install.md's "Delete the data", the namespace aside.
		env.Kubectl(ctx, framework.HostCluster, admin, "-n", framework.MeshNamespace, "delete", "pvc,secret", "-l", "app.kubernetes.io/part-of=kilo-mesh", "--ignore-not-found")
	})
	data := func() map[string]types.UID {
		t.Helper()
		out := map[string]types.UID{}
		err := framework.Eventually(ctx, 250*time.Millisecond, time.Minute, func(ctx context.Context) error {
			for i := range 3 {
				name := fmt.Sprintf("data-kilo-mesh-etcd-%d", i)
				c, err := host.CoreV1().PersistentVolumeClaims(framework.MeshNamespace).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				out["pvc/"+name] = c.UID
			}
			for _, s := range []string{"ca", "peer", "server", "client"} {
				name := "kilo-mesh-etcd-" + s
				sec, err := host.CoreV1().Secrets(framework.MeshNamespace).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				out["secret/"+name] = sec.UID
				out["secret/"+name+"/tls.crt"] = types.UID(sec.Data["tls.crt"])
			}
			return nil
		})
		if err != nil {
			t.Fatalf("the etcd members' volumes and certificates: %v", err)
		}
		return out
	}
	installed := data()
	helm("uninstall", "kilo-mesh", "-n", framework.MeshNamespace, "--wait")
	// The garbage collector has handled the etcd StatefulSet once its pods are gone.
	err = framework.Eventually(ctx, 250*time.Millisecond, time.Minute, func(ctx context.Context) error {
		pods, err := host.CoreV1().Pods(framework.MeshNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kilo-mesh-etcd"})
		if err != nil || len(pods.Items) > 0 {
			return fmt.Errorf("etcd pods still there: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept := data(); !maps.Equal(kept, installed) {
		t.Errorf("after helm uninstall: %v, installed %v", sortedKeys(kept), sortedKeys(installed))
	}
	helm(install...)
	if again := data(); !maps.Equal(again, installed) {
		t.Errorf("the reinstall did not adopt the kept volumes and certificates unchanged")
	}
}

func sortedKeys(m map[string]types.UID) []string {
	out := slices.Collect(maps.Keys(m))
	slices.Sort(out)
	return out
}

// waitConverged waits until server's reconciler has compared every mesh's
// Peers with its plan and found them as planned.
func waitConverged(t *testing.T, ctx context.Context, server *framework.MeshServer) {
	t.Helper()
	framework.EventuallyT(t, time.Minute, "the meshes' Peers as planned", func() error {
		raw, err := framework.Scrape(ctx, server.DirectRESTConfig(admin))
		if err != nil {
			return err
		}
		return peersAsPlanned(raw)
	})
}

// peersAsPlanned tells from a leader's scrape whether it holds every
// Peer its plans desire, and some.
func peersAsPlanned(raw []byte) error {
	desired, err := framework.MetricSum(raw, "kilo_mesh_peers_desired")
	if err != nil {
		return err
	}
	managed, err := framework.MetricSum(raw, "kilo_mesh_peers_managed")
	if err != nil {
		return err
	}
	if desired != managed || desired == 0 {
		return fmt.Errorf("desired %v, managed %v", desired, managed)
	}
	return nil
}
