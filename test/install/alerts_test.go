//go:build e2e

package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// pagedAlerts are the alerts an operator pages on, which the chart must ship.
var pagedAlerts = []string{
	"KiloMeshMemberUnreachable", "KiloMeshPeersNotAsPlanned", "KiloMeshPeerApplyErrors",
	"KiloMeshMemberCredentialExpiresSoon", "KiloMeshNotReady", "KiloMeshDeparturesStuck",
	"KiloMeshServicesNotReady", "KiloMeshServingCertificateExpiresSoon", "KiloMeshStoreNearQuota",
}

// TestAlerts: the chart's PrometheusRule holds the alerts file's rules,
// the paged ones among them, and every metric the alerts and the dashboard
// query has samples in a real scrape of the image's server holding a mesh
// with multi-cluster services and an expiring member credential.
func TestAlerts(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, framework.MonitoringAlertsFile))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var rule *unstructured.Unstructured
	for _, u := range decode(t, render(t, ctx, rendering{name: "helm alerts", chart: "kilo-mesh-apiserver", set: []string{"monitoring.prometheusRule.enabled=true"}})) {
		if u.GetKind() == "PrometheusRule" {
			rule = u
		}
	}
	if rule == nil {
		t.Fatal("monitoring.prometheusRule.enabled renders no PrometheusRule")
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if !reflect.DeepEqual(groups, file["groups"]) {
		t.Errorf("the PrometheusRule's groups are not those of %s", framework.MonitoringAlertsFile)
	}
	var names []string
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			names = append(names, fmt.Sprint(r.(map[string]any)["alert"]))
		}
	}
	for _, a := range pagedAlerts {
		if !slices.Contains(names, a) {
			t.Errorf("the chart ships no alert %s", a)
		}
	}

	used, err := framework.MonitoringMetrics()
	if err != nil {
		t.Fatal(err)
	}
	ensureSmokeNodes(t, ctx)
	fresh, stopFresh := context.WithCancel(ctx)
	defer stopFresh()
	go env.KeepKiloNodesFresh(fresh, 15*time.Second)
	server := startServer(t, framework.MeshServerOptions{SelfManagedCert: true})
	ns, err := env.NewNamespace(ctx, "alerts")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.CreateMemberSecret(ctx, 1, ns, "member-1", framework.MemberServices); err != nil {
		t.Fatal(err)
	}
	obj := smokeMesh(t, "alerts", "member-1")
	obj.Object["spec"].(map[string]any)["multiClusterServices"] = "Enabled"
	if _, err := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the mesh: %v", err)
	}
	framework.EventuallyT(t, time.Minute, "a sample of every metric the alerts and the dashboard query", func() error {
		raw, err := framework.Scrape(ctx, server.DirectRESTConfig(admin))
		if err != nil {
			return err
		}
		var missing []string
		for _, name := range used {
			_, err := framework.MetricSum(raw, name)
			if base, ok := strings.CutSuffix(name, "_bucket"); ok && err != nil {
				// A histogram with buckets has a count.
				_, err = framework.MetricSum(raw, base+"_count")
			}
			if err != nil {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("no samples of %v", missing)
		}
		return nil
	})
	deleteMesh(t, ctx, ns, "alerts")
}
