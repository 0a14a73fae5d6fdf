//go:build integration

package reconciler

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestReconcileRepointedSecret: an entry whose Secret is replaced by one
// for another cluster, right after the Peers were written through the old
// one, gets its Peers written on the new cluster; the mesh reads Ready
// only once the new cluster holds them and the old one none. The
// reconciler's memory of its writes is frozen, so that writes made through
// the old connection are never forgotten: counted as done on the new one,
// they would keep the new cluster empty while the status says applied.
func TestReconcileRepointedSecret(t *testing.T) {
	h := newHarness(t, 3)
	h.nodes(t, 0)
	h.nodes(t, 1)
	// Cluster 2 has the networks of cluster-1's entry.
	for j, loc := range []string{"a", "b"} {
		k := framework.KiloNode{Name: fmt.Sprintf("c2-%s1", loc), Location: loc, Endpoint: fmt.Sprintf("203.0.113.%d:51820", 30+j),
			InternalIP: fmt.Sprintf("192.168.2.%d/24", 30+j), PodCIDR: fmt.Sprintf("10.11.%d.0/24", 7+j), LastSeen: time.Now().Add(time.Hour)}
		if _, err := h.env.CreateKiloNode(h.ctx, 2, k); err != nil {
			t.Fatal(err)
		}
	}
	frozen := time.Now()
	h.reconciler(t, "only", nil, func(r *Reconciler) { r.written.now = func() time.Time { return frozen } })
	mesh := h.createMesh(t, "moved", 2)
	uid := string(mesh.UID)
	framework.EventuallyT(t, converge, "Peers as planned", func() error { return h.matchesPlan(t, mesh, 2) })
	framework.EventuallyT(t, converge, "Ready", func() error { return ready(h.mesh(t, mesh.Name)) })
	want := len(h.peers(t, 1, uid))

	secrets := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(h.ns)
	s, err := secrets.Get(h.ctx, secretName(1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["kubeconfig"] = h.env.KubeconfigBytes(2, framework.UserAdmin)
	if _, err := secrets.Update(h.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, converge, "the Peers moved to the new cluster, and the status says so", func() error {
		var problems []string
		if n := len(h.peers(t, 2, uid)); n != want {
			problems = append(problems, fmt.Sprintf("the new cluster holds %d Peers of the mesh, want %d", n, want))
		}
		if n := len(h.peers(t, 1, uid)); n != 0 {
			problems = append(problems, fmt.Sprintf("the old cluster holds %d", n))
		}
		m := h.mesh(t, mesh.Name)
		if err := ready(m); err != nil {
			problems = append(problems, err.Error())
		}
		if len(m.Status.DepartedClusters) != 0 {
			problems = append(problems, fmt.Sprintf("departed %+v", m.Status.DepartedClusters))
		}
		// A status from before the repoint may still be there when its
		// first pass has written; the new cluster has 2 nodes, the old 3.
		if cs := findClusterStatus(m.Status.Clusters, clusterName(1)); cs == nil || cs.Nodes != 2 {
			problems = append(problems, fmt.Sprintf("the status of %s is not measured on the new cluster yet: %+v", clusterName(1), cs))
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	})
	// The status was measured on the new cluster: what it counts is there.
	m := h.mesh(t, mesh.Name)
	cs := findClusterStatus(m.Status.Clusters, clusterName(1))
	if cs == nil || cs.PeersApplied != int32(want) || cs.Nodes != 2 {
		t.Errorf("status of %s = %+v, want %d Peers applied on the 2 nodes of the new cluster", clusterName(1), cs, want)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionDeparturesComplete); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("DeparturesComplete = %+v", c)
	}
}
