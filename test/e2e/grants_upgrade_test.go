//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// upgradeGracePeriod: a mesh stored before grants existed (written straight
// into etcd, as an older server stored it: no host-access record, no
// status), covered by no grant, keeps its Peers on the host for the grace
// period with Granted=False and an event, across a restart, then loses them.
// Going around the API is the only way to get such a mesh: every write
// through it, the admin's too, gets a record or keeps the stored one.
func (g *grantsEnv) upgradeGracePeriod(t *testing.T) {
	ctx := context.Background()
	ns := g.tenantNamespace(t, "pre-grant", framework.UserTenantA)
	rc := g.in(ns)
	keys, err := g.env.EtcdKeys(ctx, g.server.EtcdPrefix+"/")
	if err != nil {
		t.Fatal(err)
	}
	// The layout of the server's keys, as a mesh stored through the API shows it.
	prefix := g.server.EtcdPrefix + "/mesh.kilo.squat.ai/clustermeshes/"
	if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, prefix) }) {
		t.Fatalf("no mesh under %s in %v", prefix, keys)
	}
	old := map[string]any{
		"apiVersion": meshv1alpha1.SchemeGroupVersion.String(),
		"kind":       "ClusterMesh",
		"metadata": map[string]any{"name": "old", "namespace": ns, "uid": string(uuid.NewUUID()), "generation": 1,
			"creationTimestamp": time.Now().Add(-30 * 24 * time.Hour).UTC().Format(time.RFC3339)},
		"spec": map[string]any{"clusters": []any{
			map[string]any{"name": "cluster-0", "local": true, "podCIDRs": []any{"10.20.0.0/16"}, "wireguardCIDR": "10.50.0.0/16"},
			map[string]any{"name": "cluster-1", "kubeconfigSecretRef": map[string]any{"name": "cluster-1-kubeconfig"},
				"podCIDRs": []any{"10.21.0.0/16"}, "wireguardCIDR": "10.51.0.0/16"},
		}},
	}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.env.EtcdPut(ctx, prefix+ns+"/old", b); err != nil {
		t.Fatal(err)
	}
	var ends metav1.Time
	framework.EventuallyT(t, rcConverge, "Granted=False for the grace period, an event, the Peers on the host", func() error {
		m := rc.mesh(t, "old")
		if m == nil {
			return fmt.Errorf("the mesh stored in etcd is not served")
		}
		if err := wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonUpgradeGracePeriod); err != nil {
			return err
		}
		p := g.plan(t, ns, "old")
		if p.HostAccess == nil || p.HostAccess.GracePeriodEnds == nil {
			return fmt.Errorf("plan's hostAccess %+v", p.HostAccess)
		}
		ends = *p.HostAccess.GracePeriodEnds
		if len(rc.events(t, "old", planner.HostReasonUpgradeGracePeriod)) == 0 {
			return fmt.Errorf("no %s event", planner.HostReasonUpgradeGracePeriod)
		}
		if len(g.meshPeers(t, ns, 0, string(m.UID))) == 0 {
			return fmt.Errorf("no Peer on the host during the grace period")
		}
		return nil
	})
	if d := time.Until(ends.Time); d <= 0 || d > grantsGrace {
		t.Fatalf("the grace period ends at %s, %s from now; want within %s", ends, d, grantsGrace)
	}

	// The end is kept in the mesh's status, not in memory.
	if err := g.server.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := g.server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if p := g.plan(t, ns, "old"); p.HostAccess == nil || p.HostAccess.GracePeriodEnds == nil || !p.HostAccess.GracePeriodEnds.Equal(&ends) {
		t.Errorf("after a restart the grace period ends at %+v, before at %s", p.HostAccess, ends)
	}

	var m *meshv1alpha1.ClusterMesh
	framework.EventuallyT(t, time.Until(ends.Time)+promptly, "the Peers gone from the host after the grace period", func() error {
		m = rc.mesh(t, "old")
		if n := len(g.meshPeers(t, ns, 0, string(m.UID))); n > 0 {
			return fmt.Errorf("%d Peers still on the host", n)
		}
		return wantCondition(m, meshv1alpha1.ConditionGranted, metav1.ConditionFalse, planner.HostReasonGracePeriodExpired)
	})
	if time.Now().Before(ends.Time) {
		t.Errorf("the Peers went before the grace period ended at %s", ends)
	}
	t.Logf("the grace period ended at %s; the host was emptied by %s", ends.Format(time.RFC3339), time.Now().Format(time.RFC3339))
}
