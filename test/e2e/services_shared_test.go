//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// rivalMesh is tenant-b's mesh with services: its local cluster and
// cluster one of svc, declared alike, reached through Secret SECRET.
const rivalMesh = `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: NAME
spec:
  multiClusterServices: Enabled
  clusters:
  - name: rivalhome
    local: true
    podCIDRs: ["10.70.0.0/16"]
    wireguardCIDR: 10.71.0.0/16
  - name: rivalside
    kubeconfigSecretRef: {name: SECRET}
    podCIDRs: ["10.11.0.0/16"]
    wireguardCIDR: 10.41.0.0/16
`

// testSharedCluster: tenant-b creates a mesh with services Enabled before
// the Secret of its entry exists, so admission cannot tell that the entry
// reaches cluster one, which svc has with services; then the Secret
// appears. Both meshes report the shared cluster (ServicesExclusive False,
// ServicesClusterShared, a Warning event) naming only their own entry; the
// later mesh is not Ready and svc's Ready does not move. While shared,
// only svc writes the export's status in cluster one (the rival yields the
// cluster: its view says so and blocks its import there). It clears when
// the rival disables its services, and when a rival is deleted.
func (s *svcEnv) testSharedCluster(t *testing.T) {
	ctx := context.Background()
	tenant := framework.NamespaceTenantB
	if err := s.env.ApplyGrant(ctx, "svcshared", framework.TenantGrant(tenant)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.env.DeleteGrant(ctx, "svcshared"); err != nil {
			t.Error(err)
		}
	})
	// An export of cluster one, whose conditions both meshes compute.
	ns := s.namespace(t, 1, 2)
	s.exportedToBoth(t, ns, "desk", "10.11.1.60")
	// Ready counts the endpoint once its Pod is Ready: until then the
	// conditions still move, and would read as a fight below.
	var before []metav1.Condition
	framework.EventuallyT(t, svcConverge, "svc's conditions of "+ns+"/desk, its endpoint counted", func() (err error) {
		before, err = s.exportConditions(ns, "desk")
		ready := meta.FindStatusCondition(before, "Ready")
		if err == nil && (len(before) < 3 || ready == nil || ready.Status != metav1.ConditionTrue || ready.Message != "1 endpoints exported") {
			err = fmt.Errorf("conditions %+v", before)
		}
		return err
	})

	first := s.rival(t, "rival", "rival-kubeconfig")
	s.wantShared(t, tenant, first, "rivalside", true)
	s.wantShared(t, s.ns, "svc", "one", false)
	s.wantNoFight(t, ns, "desk", before)
	s.wantYieldedView(t, tenant, first, "rivalside", ns, "desk")

	// The rival disables its services: both meshes clear.
	s.env.KubectlT(t, framework.HostCluster, framework.UserTenantB, "-n", tenant, "patch", "clustermesh", first, "--type=merge",
		"-p", `{"spec":{"multiClusterServices":"Disabled"}}`)
	s.wantExclusive(t, tenant, first, meshv1alpha1.ConditionServicesExclusive+" True with reason ServicesDisabled", func(m *meshv1alpha1.ClusterMesh) bool {
		c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionServicesExclusive)
		r := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "ServicesDisabled" &&
			r != nil && r.Reason != planner.WarningServicesClusterShared && !strings.Contains(r.Message, meshv1alpha1.ConditionServicesExclusive)
	})
	s.wantExclusive(t, s.ns, "svc", meshv1alpha1.ConditionServicesExclusive+" True with reason Exclusive", exclusive)
	t.Logf("once cleared, the ServiceExport %s/desk of cluster one was rewritten %d times in 10s", ns, s.exportWrites(t, ns, "desk", 10*time.Second))

	// Another rival, deleted while it shares the cluster: svc clears.
	s.env.KubectlT(t, framework.HostCluster, framework.UserTenantB, "-n", tenant, "delete", "clustermesh", first)
	second := s.rival(t, "again", "again-kubeconfig")
	s.wantShared(t, s.ns, "svc", "one", false)
	s.env.KubectlT(t, framework.HostCluster, framework.UserTenantB, "-n", tenant, "delete", "clustermesh", second, "--wait=false")
	s.wantExclusive(t, s.ns, "svc", meshv1alpha1.ConditionServicesExclusive+" True with reason Exclusive after the rival's deletion", exclusive)
}

func exclusive(m *meshv1alpha1.ClusterMesh) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionServicesExclusive)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "Exclusive"
}

// rival creates tenant-b's mesh name while its Secret does not exist
// (admission lets it in), then the Secret, for cluster one.
func (s *svcEnv) rival(t *testing.T, name, secret string) string {
	t.Helper()
	ctx := context.Background()
	manifest := strings.NewReplacer("NAME", name, "SECRET", secret).Replace(rivalMesh)
	framework.EventuallyT(t, svcConverge, "tenant-b's mesh "+name+" admitted (the grant seen)", func() error {
		_, stderr, err := s.env.KubectlWithInput(ctx, strings.NewReader(manifest), framework.HostCluster, framework.UserTenantB,
			"-n", framework.NamespaceTenantB, "create", "-f", "-")
		if err != nil && !strings.Contains(stderr, "AlreadyExists") {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		return nil
	})
	t.Cleanup(func() {
		err := s.env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(framework.ClusterMeshGVR).Namespace(framework.NamespaceTenantB).
			Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	if _, err := s.env.CreateKubeconfigSecret(ctx, framework.NamespaceTenantB, secret, 1, framework.UserAdmin); err != nil {
		t.Fatal(err)
	}
	return name
}

// wantShared waits for mesh ns/name to report its entry as shared with
// another services mesh, by condition and event, in words that name none
// of the other mesh; later says whether it is the later mesh, whose Ready
// must say so (the earlier one's must not).
func (s *svcEnv) wantShared(t *testing.T, ns, name, entry string, later bool) {
	t.Helper()
	// The other tenant's names, as words ("one" is in the text itself).
	others := []string{framework.NamespaceTenantB, "rival", "again", "rivalside", "rivalhome"}
	if ns == framework.NamespaceTenantB {
		others = []string{s.ns, "svc", "two"}
	}
	hidden := func(what, text string) error {
		for _, o := range others {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(o) + `\b`).MatchString(text) {
				return fmt.Errorf("%s of %s/%s reveals %q of the other tenant: %s", what, ns, name, o, text)
			}
		}
		return nil
	}
	var mesh *meshv1alpha1.ClusterMesh
	framework.EventuallyT(t, svcConverge, fmt.Sprintf("%s/%s reports %s shared", ns, name, entry), func() error {
		var err error
		if mesh, err = s.meshIn(ns, name); err != nil {
			return err
		}
		c := meta.FindStatusCondition(mesh.Status.Conditions, meshv1alpha1.ConditionServicesExclusive)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != planner.WarningServicesClusterShared ||
			!strings.Contains(c.Message, planner.WarningServicesClusterShared+" ("+entry+")") {
			return fmt.Errorf("%s is %+v", meshv1alpha1.ConditionServicesExclusive, c)
		}
		return hidden(meshv1alpha1.ConditionServicesExclusive, c.Message)
	})
	ready := meta.FindStatusCondition(mesh.Status.Conditions, meshv1alpha1.ConditionReady)
	if c := meta.FindStatusCondition(mesh.Status.Conditions, meshv1alpha1.ConditionServicesExclusive); ready != nil {
		t.Logf("%s/%s: %s %s: %s | Ready %s %s: %s", ns, name, c.Type, c.Reason, c.Message, ready.Status, ready.Reason, ready.Message)
	}
	says := ready != nil && ready.Status == metav1.ConditionFalse &&
		(ready.Reason == planner.WarningServicesClusterShared || strings.Contains(ready.Message, meshv1alpha1.ConditionServicesExclusive+" is False"))
	switch {
	case ready == nil:
		t.Errorf("%s/%s has no Ready condition", ns, name)
	case later && !says:
		t.Errorf("the later mesh %s/%s is Ready %s/%s (%s) while it shares %s", ns, name, ready.Status, ready.Reason, ready.Message, entry)
	case !later && (ready.Reason == planner.WarningServicesClusterShared || strings.Contains(ready.Message, meshv1alpha1.ConditionServicesExclusive)):
		t.Errorf("the earlier mesh %s/%s was made unready by the later one: %s (%s)", ns, name, ready.Reason, ready.Message)
	}
	if ready != nil {
		if err := hidden("Ready", ready.Message); err != nil {
			t.Error(err)
		}
	}
	framework.EventuallyT(t, svcConverge, fmt.Sprintf("a %s event of %s/%s", planner.WarningServicesClusterShared, ns, name), func() error {
		list, err := s.kube(framework.HostCluster).CoreV1().Events(ns).List(context.Background(),
			metav1.ListOptions{FieldSelector: "reason=" + planner.WarningServicesClusterShared})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Type == "Warning" && strings.Contains(e.Message, "("+entry+")") {
				return hidden("the event", e.Message)
			}
		}
		return fmt.Errorf("none among %d", len(list.Items))
	})
}

// wantExclusive waits until mesh ns/name satisfies ok.
func (s *svcEnv) wantExclusive(t *testing.T, ns, name, what string, ok func(*meshv1alpha1.ClusterMesh) bool) {
	t.Helper()
	framework.EventuallyT(t, svcConverge, fmt.Sprintf("%s/%s: %s", ns, name, what), func() error {
		m, err := s.meshIn(ns, name)
		if err != nil {
			return err
		}
		if !ok(m) {
			return fmt.Errorf("conditions %+v", m.Status.Conditions)
		}
		return nil
	})
}

// meshIn reads ClusterMesh ns/name through the aggregation layer.
func (s *svcEnv) meshIn(ns, name string) (*meshv1alpha1.ClusterMesh, error) {
	u, err := s.env.Dynamic(framework.HostCluster, framework.UserAdmin).Resource(framework.ClusterMeshGVR).Namespace(ns).
		Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ClusterMesh %s/%s: %w", ns, name, err)
	}
	m := &meshv1alpha1.ClusterMesh{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, m); err != nil {
		return nil, fmt.Errorf("converting ClusterMesh %s/%s: %w", ns, name, err)
	}
	return m, nil
}

// wantNoFight checks that, while cluster one is shared, only svc (the
// earlier mesh) writes the status of its ServiceExport ns/name: its
// conditions are svc's (before), and it is not rewritten over several passes.
func (s *svcEnv) wantNoFight(t *testing.T, ns, name string, before []metav1.Condition) {
	t.Helper()
	framework.EventuallyT(t, svcConverge, fmt.Sprintf("svc's conditions on %s/%s while shared", ns, name), func() error {
		now, err := s.exportConditions(ns, name)
		if err != nil {
			return err
		}
		if !sameConditions(before, now) {
			return fmt.Errorf("conditions %+v, svc's were %+v", now, before)
		}
		return nil
	})
	se, err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := s.exportWrites(t, ns, name, 10*time.Second)
	after, err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || after.ResourceVersion != se.ResourceVersion || !sameConditions(before, after.Status.Conditions) {
		t.Errorf("while shared, the ServiceExport %s/%s of cluster one was rewritten %d times in 10s (resourceVersion %s, then %s), conditions %+v, svc's %+v",
			ns, name, n, se.ResourceVersion, after.ResourceVersion, after.Status.Conditions, before)
	}
}

// wantYieldedView waits for the services view of the later mesh ns/mesh
// to say that its entry is yielded and that the import of exportNS/export
// is blocked there for that reason.
func (s *svcEnv) wantYieldedView(t *testing.T, ns, mesh, entry, exportNS, export string) {
	t.Helper()
	framework.EventuallyT(t, svcConverge, fmt.Sprintf("the services view of %s/%s yields %s", ns, mesh, entry), func() error {
		v, err := s.viewIn(ns, mesh)
		if err != nil {
			return err
		}
		for _, c := range v.Clusters {
			if c.Cluster == entry && c.Reason != planner.WarningServicesClusterShared {
				return fmt.Errorf("cluster %s has reason %q: %s", entry, c.Reason, c.Message)
			}
		}
		if imp := viewImport(v, entry, exportNS, export); imp == nil || imp.Blocked != planner.WarningServicesClusterShared {
			return fmt.Errorf("import of %s/%s in %s: %+v", exportNS, export, entry, imp)
		}
		return nil
	})
}

// exportConditions are the conditions of ServiceExport ns/name of cluster one.
func (s *svcEnv) exportConditions(ns, name string) ([]metav1.Condition, error) {
	se, err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ServiceExport %s/%s: %w", ns, name, err)
	}
	return se.Status.Conditions, nil
}

// sameConditions compares what a writer sets: type, status, reason, message.
func sameConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		d := meta.FindStatusCondition(b, c.Type)
		if d == nil || d.Status != c.Status || d.Reason != c.Reason || d.Message != c.Message {
			return false
		}
	}
	return true
}

// exportWrites counts the changes of ServiceExport ns/name of cluster one
// seen in d: the writes of one export's conditions.
func (s *svcEnv) exportWrites(t *testing.T, ns, name string, d time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w, err := s.mcs(1).MulticlusterV1beta1().ServiceExports(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	n := 0
	for e := range w.ResultChan() {
		if e.Type == watch.Modified {
			n++
		}
	}
	return n
}
