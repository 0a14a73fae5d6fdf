//go:build e2e

package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The networks of the four clusters of TestLeave: cluster i has pods
// 10.(42+10i).0.0/16, services 10.(43+10i).0.0/16, Kilo subnet 10.(4+i).0.0/16.
var leaveServiceCIDRs = []string{"10.43.0.0/16", "10.53.0.0/16", "10.63.0.0/16", "10.73.0.0/16"}

// TestLeave: join refuses to repoint an entry at another cluster unless
// --replace; leave removes an entry and waits until no cluster holds
// Peers of it, then removes the Secret and, unless kept, the member
// identity; --dry-run changes nothing. A mesh needs two clusters at any
// time, so the mesh has three and a fourth cluster is where west moves;
// once it has two, leave is refused and --replace repoints in place.
func TestLeave(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 4, ServiceCIDRs: leaveServiceCIDRs})
	env.StartMeshServerT(t, framework.MeshServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for i, name := range []string{"e1", "w1", "n1", "s1"} {
		n := framework.KiloNode{Name: name, InternalIP: fmt.Sprintf("192.168.%d.1/24", i), Location: name, Leader: true,
			Endpoint: fmt.Sprintf("198.51.100.%d:51820", i+1), WireGuardIP: fmt.Sprintf("10.%d.0.1/16", 4+i), PodCIDR: fmt.Sprintf("10.%d.1.0/24", 42+10*i)}
		if _, err := env.CreateKiloNode(ctx, i, n); err != nil {
			t.Fatalf("node %s: %v", name, err)
		}
	}
	go env.KeepKiloNodesFresh(ctx, 15*time.Second)
	ns, err := env.NewNamespace(ctx, "leave")
	if err != nil {
		t.Fatal(err)
	}
	// A mesh has two clusters at least: west starts with the admin's
	// kubeconfig, which join replaces with the member identity's.
	if _, err := env.CreateKubeconfigSecret(ctx, ns, "west-kubeconfig", 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	env.KubectlInT(t, framework.HostCluster, framework.UserAdmin, joinMesh, "apply", "-n", ns, "-f", "-")

	host := env.Client(framework.HostCluster, framework.UserAdmin)
	meshes := env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(framework.ClusterMeshGVR).Namespace(ns)
	join := func(name string, cluster int, extra ...string) result {
		t.Helper()
		args := append([]string{"join", "demo", "-n", ns, "--name", name, "--member-kubeconfig", env.Kubeconfig(cluster, framework.UserAdmin),
			"--pod-cidrs", fmt.Sprintf("10.%d.0.0/16", 42+10*cluster), "--wireguard-cidr", fmt.Sprintf("10.%d.0.0/16", 4+cluster)}, extra...)
		return mesh(t, env, framework.UserAdmin, args...)
	}
	generation := func() int64 {
		m, err := meshes.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return m.GetGeneration()
	}
	// peers counts the Peers on cluster that match the mesh's labels and extra.
	peers := func(cluster int, extra string) int {
		t.Helper()
		sel := planner.LabelMeshNamespace + "=" + ns + "," + planner.LabelMeshName + "=demo"
		if extra != "" {
			sel += "," + extra
		}
		list, err := env.Dynamic(cluster, framework.UserAdmin).Resource(kilov1alpha1.PeerResource).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	identityOn := func(cluster int) bool {
		t.Helper()
		_, err := env.Client(cluster, framework.UserAdmin).RbacV1().ClusterRoles().Get(ctx, member.ClusterRole, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	secretServer := func(name string) string {
		t.Helper()
		s, err := host.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := memberaccess.ParseKubeconfig(s.Data["kubeconfig"], false)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Host
	}
	// gone checks what a departed cluster must no longer hold or be held in.
	gone := func(t *testing.T, name string, cluster int, others ...int) {
		t.Helper()
		if n := peers(cluster, ""); n != 0 {
			t.Errorf("cluster %d, which %s left, holds %d Peers of the mesh", cluster, name, n)
		}
		for _, o := range others {
			if n := peers(o, planner.LabelSourceCluster+"="+name); n != 0 {
				t.Errorf("cluster %d holds %d Peers of %s after it left", o, n, name)
			}
		}
		if s := secretServer(name + "-kubeconfig"); s != "" {
			t.Errorf("Secret %s-kubeconfig is still there (for %s)", name, s)
		}
	}
	ready := func(t *testing.T) {
		t.Helper()
		mustMesh(t, env, framework.UserAdmin, "status", "demo", "-n", ns, "--wait", "--timeout", "120s")
	}

	for _, c := range []struct {
		name    string
		cluster int
	}{{"west", 1}, {"north", 2}} {
		if r := join(c.name, c.cluster); r.code != 0 {
			t.Fatalf("join %s: %s", c.name, r)
		}
	}
	ready(t)
	if peers(1, "") == 0 || peers(framework.HostCluster, planner.LabelSourceCluster+"=west") == 0 {
		t.Fatalf("west holds no Peers of the mesh, or east none of west, once Ready")
	}

	t.Run("repointing an entry at another cluster is refused, naming both servers", func(t *testing.T) {
		before := generation()
		r := join("west", 3)
		if r.code != 1 || !strings.Contains(r.stderr, env.Cluster(1).URL) || !strings.Contains(r.stderr, env.Cluster(3).URL) ||
			!strings.Contains(r.stderr, "nothing was changed") || !strings.Contains(r.stderr, "--replace") {
			t.Errorf("join west at cluster 3: want exit 1 naming %s and %s, got %s", env.Cluster(1).URL, env.Cluster(3).URL, r)
		}
		if strings.Contains(r.stdout+r.stderr, env.Token(framework.UserAdmin)) {
			t.Errorf("the refusal printed a token")
		}
		if after := generation(); after != before {
			t.Errorf("a refused join changed the mesh: generation %d -> %d", before, after)
		}
		if s := secretServer("west-kubeconfig"); s != env.Cluster(1).URL {
			t.Errorf("a refused join changed west's Secret: it names %s", s)
		}
		if identityOn(3) {
			t.Errorf("a refused join applied the member identity on cluster 3")
		}
	})

	t.Run("leave --dry-run changes nothing", func(t *testing.T) {
		before := generation()
		r := mustMesh(t, env, framework.UserAdmin, "leave", "demo", "-n", ns, "--name", "north", "--member-kubeconfig", env.Kubeconfig(2, framework.UserAdmin), "--dry-run")
		for _, want := range []string{"Would remove entry north (spec.clusters[2], " + env.Cluster(2).URL + ")", "Would delete Secret " + ns + "/north-kubeconfig",
			"Would delete the member identity on " + env.Cluster(2).URL, "Dry run: nothing was changed"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("leave --dry-run lacks %q:\n%s", want, r)
			}
		}
		if after := generation(); after != before {
			t.Errorf("leave --dry-run changed the mesh: generation %d -> %d", before, after)
		}
		if secretServer("north-kubeconfig") == "" || !identityOn(2) || peers(2, "") == 0 {
			t.Errorf("leave --dry-run removed the Secret, the identity or the Peers of north")
		}
	})

	t.Run("join --replace moves west to another cluster", func(t *testing.T) {
		r := join("west", 3, "--replace")
		if r.code != 0 || !strings.Contains(r.stdout, "it leaves first") || !strings.Contains(r.stdout, "Member identity on "+env.Cluster(1).URL+": kept") ||
			!strings.Contains(r.stdout, "entry west added") {
			t.Fatalf("join --replace: %s", r)
		}
		ready(t)
		if n := peers(1, ""); n != 0 {
			t.Errorf("the cluster west left holds %d Peers of the mesh", n)
		}
		if s := secretServer("west-kubeconfig"); s != env.Cluster(3).URL {
			t.Errorf("west's Secret names %s, want %s", s, env.Cluster(3).URL)
		}
		if peers(3, "") != 2 || peers(framework.HostCluster, planner.LabelSourceCluster+"=west") != 1 {
			t.Errorf("once Ready, west's new cluster holds %d Peers of the mesh (want 2: east's and north's), east %d of west (want 1)\n%s\n%s",
				peers(3, ""), peers(framework.HostCluster, planner.LabelSourceCluster+"=west"),
				mesh(t, env, framework.UserAdmin, "status", "demo", "-n", ns), mesh(t, env, framework.UserAdmin, "plan", "demo", "-n", ns))
		}
		if !identityOn(1) {
			t.Errorf("--replace deleted the identity on the old cluster, which it has no credentials for")
		}
	})

	t.Run("leave --keep-identity", func(t *testing.T) {
		r := mustMesh(t, env, framework.UserAdmin, "leave", "demo", "-n", ns, "--name", "north", "--member-kubeconfig", env.Kubeconfig(2, framework.UserAdmin), "--keep-identity", "--timeout", "120s")
		if !strings.Contains(r.stdout, "Secret "+ns+"/north-kubeconfig: deleted") || !strings.Contains(r.stdout, "kept (--keep-identity)") {
			t.Errorf("leave --keep-identity:\n%s", r)
		}
		gone(t, "north", 2, 0, 3)
		if !identityOn(2) {
			t.Errorf("leave --keep-identity deleted the member identity")
		}
	})

	t.Run("leave deletes the Secret and the member identity", func(t *testing.T) {
		// A mesh keeps two clusters: north joins again first.
		if r := join("north", 2); r.code != 0 {
			t.Fatalf("join north again: %s", r)
		}
		ready(t)
		r := mustMesh(t, env, framework.UserAdmin, "leave", "demo", "-n", ns, "--name", "west", "--member-kubeconfig", env.Kubeconfig(3, framework.UserAdmin), "--timeout", "120s")
		if !strings.Contains(r.stdout, "ClusterRole/"+member.ClusterRole+": deleted") {
			t.Errorf("leave:\n%s", r)
		}
		gone(t, "west", 3, 0, 2)
		if identityOn(3) {
			t.Errorf("leave left the member identity on cluster 3")
		}
		nsObj, err := env.Client(3, framework.UserAdmin).CoreV1().Namespaces().Get(ctx, member.Namespace, metav1.GetOptions{})
		if err == nil && nsObj.DeletionTimestamp == nil {
			t.Errorf("namespace %s on cluster 3 is not being deleted", member.Namespace)
		}
		ready(t)
	})

	// The mesh is east and north now: the fewest clusters a mesh may have.
	t.Run("in a mesh of two, leave is refused and join --replace repoints in place", func(t *testing.T) {
		before := generation()
		r := mesh(t, env, framework.UserAdmin, "leave", "demo", "-n", ns, "--name", "north")
		for _, want := range []string{"the fewest a mesh may have", "nothing was changed", "kubectl delete clustermesh demo -n " + ns, "--replace", "join another cluster first"} {
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("leave in a mesh of two: want exit 1 saying %q, got %s", want, r)
			}
		}
		if after := generation(); after != before {
			t.Errorf("a refused leave changed the mesh: generation %d -> %d", before, after)
		}
		if r := join("north", 1); r.code != 1 || !strings.Contains(r.stderr, "repoints the entry in place") {
			t.Errorf("join north at cluster 1 without --replace: want exit 1 proposing --replace, got %s", r)
		}

		r = join("north", 1, "--replace")
		old := env.Cluster(2).URL
		for _, want := range []string{"repointed in place", "entry north updated", "The server removed the Peers of clustermesh " + ns + "/demo from " + old,
			"Member identity on " + old + ": kept"} {
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Fatalf("join --replace in a mesh of two: want exit 0 saying %q, got %s", want, r)
			}
		}
		// join returned once the old cluster held none of the mesh's Peers.
		if n := peers(2, ""); n != 0 {
			t.Errorf("once join --replace returned, the cluster north left holds %d Peers of the mesh", n)
		}
		if s := secretServer("north-kubeconfig"); s != env.Cluster(1).URL {
			t.Errorf("north's Secret names %s, want %s", s, env.Cluster(1).URL)
		}
		ready(t)
		// Ready only once the new cluster holds what the status counts.
		if peers(1, "") != 1 || peers(framework.HostCluster, planner.LabelSourceCluster+"=north") != 1 || peers(2, "") != 0 {
			t.Errorf("once Ready, north's new cluster holds %d Peers of the mesh (want 1: east's), east %d of north (want 1), the old cluster %d (want 0)\n%s",
				peers(1, ""), peers(framework.HostCluster, planner.LabelSourceCluster+"=north"), peers(2, ""),
				mesh(t, env, framework.UserAdmin, "status", "demo", "-n", ns))
		}
		if !identityOn(2) {
			t.Errorf("--replace deleted the identity on the old cluster, which it has no credentials for")
		}
	})
}
