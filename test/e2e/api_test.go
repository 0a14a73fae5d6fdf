//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

const admin = framework.UserAdmin

func TestDiscovery(t *testing.T) {
	out := kubectl(t, admin, "api-resources", "--api-group=mesh.kilo.squat.ai", "-o", "wide")
	for _, want := range []string{"clustermeshes", "cmesh", "mesh.kilo.squat.ai/v1alpha1", "true", "ClusterMesh", "kilo"} {
		if !strings.Contains(out, want) {
			t.Errorf("api-resources lacks %q:\n%s", want, out)
		}
	}
	// The category lets users list meshes together with Kilo's Peers.
	kubectl(t, admin, "get", "kilo", "-A")
}

func TestCreateGetListWatchDelete(t *testing.T) {
	ns := namespace(t, "crud")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Watch before creating so the ADDED and DELETED events are seen.
	watch := exec.CommandContext(ctx, env.KubectlPath(), "--kubeconfig", env.Kubeconfig(framework.HostCluster, admin),
		"-n", ns, "get", "clustermeshes", "--watch", "--output-watch-events", "-o", "custom-columns=EVENT:.type,NAME:.object.metadata.name", "--no-headers")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
	events := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			events <- strings.Join(strings.Fields(s.Text()), " ")
		}
		close(events)
	}()
	time.Sleep(time.Second) // let the watch establish

	if _, stderr, err := kubectlIn(t, admin, manifest(t, "valid.yaml", "alpha"), "-n", ns, "create", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	if _, stderr, err := kubectlIn(t, admin, strings.Replace(manifest(t, "valid.yaml", "beta"), "team: network", "team: platform", 1), "-n", ns, "create", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}

	t.Run("get applies defaults", func(t *testing.T) {
		var m struct {
			Metadata struct{ Generation int64 }
			Spec     struct {
				MultiClusterServices string
				Clusters             []struct {
					Name                string
					WireguardPort       int32
					Granularity         string
					TopologyLabel       string
					KubeconfigSecretRef *struct{ Name, Key string }
				}
			}
		}
		if err := json.Unmarshal([]byte(kubectl(t, admin, "-n", ns, "get", "cmesh", "alpha", "-o", "json")), &m); err != nil {
			t.Fatal(err)
		}
		west := m.Spec.Clusters[1]
		if m.Metadata.Generation != 1 || west.WireguardPort != 51820 || west.Granularity != "Auto" ||
			west.TopologyLabel != "topology.kubernetes.io/region" || west.KubeconfigSecretRef.Key != "kubeconfig" ||
			m.Spec.MultiClusterServices != "Disabled" {
			t.Errorf("defaults missing: %+v", m)
		}
	})
	t.Run("table columns", func(t *testing.T) {
		out := kubectl(t, admin, "-n", ns, "get", "clustermeshes")
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		if strings.Join(header, " ") != "NAME CLUSTERS READY PEERS SKIPPED AGE" {
			t.Errorf("header %v\n%s", header, out)
		}
		if !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") {
			t.Errorf("list lacks meshes:\n%s", out)
		}
		wide := kubectl(t, admin, "-n", ns, "get", "clustermeshes", "-o", "wide")
		for _, col := range []string{"LOCAL", "REACHABLE", "NODES", "MESSAGE", "east"} {
			if !strings.Contains(wide, col) {
				t.Errorf("wide output lacks %s:\n%s", col, wide)
			}
		}
	})
	t.Run("label and field selectors", func(t *testing.T) {
		if out := kubectl(t, admin, "-n", ns, "get", "cmesh", "-l", "team=platform", "-o", "name"); strings.TrimSpace(out) != "clustermesh.mesh.kilo.squat.ai/beta" {
			t.Errorf("label selector: %q", out)
		}
		if out := kubectl(t, admin, "-n", ns, "get", "cmesh", "--field-selector", "metadata.name=alpha", "-o", "name"); strings.TrimSpace(out) != "clustermesh.mesh.kilo.squat.ai/alpha" {
			t.Errorf("field selector: %q", out)
		}
	})
	t.Run("pagination", func(t *testing.T) {
		var list struct {
			Metadata struct{ Continue string }
			Items    []json.RawMessage
		}
		raw := kubectl(t, admin, "get", "--raw", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+ns+"/clustermeshes?limit=1")
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Metadata.Continue == "" {
			t.Errorf("limit=1 gave %d items, continue %q", len(list.Items), list.Metadata.Continue)
		}
	})

	kubectl(t, admin, "-n", ns, "delete", "cmesh", "alpha", "beta", "--wait=true")
	if out := kubectl(t, admin, "-n", ns, "get", "cmesh", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("meshes left after delete: %q", out)
	}
	want := map[string]bool{"ADDED alpha": false, "ADDED beta": false, "DELETED alpha": false, "DELETED beta": false}
	deadline := time.After(30 * time.Second)
	for missing := len(want); missing > 0; {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("watch ended early; seen %v", want)
			}
			if seen, known := want[e]; known && !seen {
				want[e] = true
				missing--
			}
		case <-deadline:
			t.Fatalf("watch events missing: %v", want)
		}
	}
}

func TestExplain(t *testing.T) {
	out := kubectl(t, admin, "explain", "clustermesh.spec.clusters")
	for _, want := range []string{"podCIDRs", "wireguardCIDR", "kubeconfigSecretRef", "nodeCIDRs", "granularity", "at least two"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	out = kubectl(t, admin, "explain", "clustermesh.spec.multiClusterServices")
	for _, want := range []string{"Enabled", "Disabled", "ServiceImport", "at most one mesh"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain of multiClusterServices lacks %q:\n%s", want, out)
		}
	}
	for field, wants := range map[string][]string{
		"clustermesh.spec.relayCluster":       {"behind NAT", "first cluster by name", "direct"},
		"clustermesh.spec.clusters.behindNAT": {"no other cluster can dial", "keepalive", "relayCluster"},
	} {
		out = kubectl(t, admin, "explain", field)
		flat := strings.Join(strings.Fields(out), " ") // kubectl wraps the description
		for _, want := range wants {
			if !strings.Contains(flat, want) {
				t.Errorf("explain of %s lacks %q:\n%s", field, want, out)
			}
		}
	}
	out = kubectl(t, admin, "explain", "cmesh.status.clusters.skippedByReason")
	if !strings.Contains(out, "reason") || !strings.Contains(out, "count") {
		t.Errorf("explain of status lacks fields:\n%s", out)
	}
}

func TestServerSideApply(t *testing.T) {
	ns := namespace(t, "ssa")
	m := manifest(t, "valid.yaml", "applied")
	if _, stderr, err := kubectlIn(t, admin, m, "-n", ns, "apply", "--server-side", "--field-manager=alice", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, stderr)
	}
	// A second manager owns a field of one list entry only: the clusters
	// list is a map keyed by name, so entries are merged, not replaced.
	patch := `apiVersion: mesh.kilo.squat.ai/v1alpha1
kind: ClusterMesh
metadata:
  name: applied
spec:
  clusters:
  - name: west
    persistentKeepalive: 25
`
	if _, stderr, err := kubectlIn(t, admin, patch, "-n", ns, "apply", "--server-side", "--field-manager=bob", "-f", "-"); err != nil {
		t.Fatalf("second manager: %v\n%s", err, stderr)
	}
	var got struct {
		Metadata struct {
			Generation    int64
			ManagedFields []struct {
				Manager  string
				FieldsV1 json.RawMessage
			}
		}
		Spec struct {
			Clusters []struct {
				Name                string
				PersistentKeepalive int32
			}
		}
	}
	if err := json.Unmarshal([]byte(kubectl(t, admin, "-n", ns, "get", "cmesh", "applied", "-o", "json", "--show-managed-fields")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Clusters) != 2 || got.Spec.Clusters[1].PersistentKeepalive != 25 || got.Metadata.Generation != 2 {
		t.Fatalf("merged object wrong: %+v", got)
	}
	managers := map[string]string{}
	for _, f := range got.Metadata.ManagedFields {
		managers[f.Manager] = string(f.FieldsV1)
	}
	if !strings.Contains(managers["bob"], `k:{\"name\":\"west\"}`) || !strings.Contains(managers["bob"], "f:persistentKeepalive") {
		t.Errorf("bob's fields not tracked per list entry: %s", managers["bob"])
	}
	if !strings.Contains(managers["alice"], `k:{\"name\":\"east\"}`) {
		t.Errorf("alice's fields not tracked: %s", managers["alice"])
	}
	// Alice re-applying a different value for bob's field is a conflict.
	conflicting := strings.Replace(m, "    wireguardCIDR: 10.5.0.0/16", "    wireguardCIDR: 10.5.0.0/16\n    persistentKeepalive: 10", 1)
	_, stderr, err := kubectlIn(t, admin, conflicting, "-n", ns, "apply", "--server-side", "--field-manager=alice", "-f", "-")
	if err == nil || !strings.Contains(stderr, "conflict") {
		t.Errorf("want a conflict, got err %v: %s", err, stderr)
	}
}

// TestUnknownFieldsAreRejected: the published schema is what the server
// enforces, so a typo in a manifest is an error, not silently dropped.
func TestUnknownFieldsAreRejected(t *testing.T) {
	ns := namespace(t, "strict")
	typo := strings.Replace(manifest(t, "valid.yaml", "typo"), "    wireguardCIDR: 10.5.0.0/16", "    wireguardCIDR: 10.5.0.0/16\n    persistentKeepAlive: 25", 1)
	for _, args := range [][]string{
		{"create", "--validate=strict", "-f", "-"},
		{"apply", "--server-side", "--validate=strict", "-f", "-"},
	} {
		_, stderr, err := kubectlIn(t, admin, typo, append([]string{"-n", ns}, args...)...)
		if err == nil || !strings.Contains(stderr, "persistentKeepAlive") {
			t.Errorf("kubectl %v accepted an unknown field: %v %s", args, err, stderr)
		}
	}
}

func TestDryRunStoresNothing(t *testing.T) {
	ns := namespace(t, "dryrun")
	out, stderr, err := kubectlIn(t, admin, manifest(t, "valid.yaml", "dry"), "-n", ns, "create", "--dry-run=server", "-o", "jsonpath={.spec.clusters[1].wireguardPort}", "-f", "-")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, stderr)
	}
	if out != "51820" {
		t.Errorf("dry run did not return the defaulted object: %q", out)
	}
	if stderr := kubectlErr(t, admin, "-n", ns, "get", "cmesh", "dry"); !strings.Contains(stderr, "NotFound") && !strings.Contains(stderr, "not found") {
		t.Errorf("dry run stored the mesh: %s", stderr)
	}
	// Server-side apply's dry run stores nothing either.
	if _, stderr, err := kubectlIn(t, admin, manifest(t, "valid.yaml", "dry"), "-n", ns, "apply", "--server-side", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("apply dry run: %v\n%s", err, stderr)
	}
	if out := kubectl(t, admin, "-n", ns, "get", "cmesh", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("apply dry run stored %q", out)
	}
}

func TestInvalidManifestNamesEveryField(t *testing.T) {
	ns := namespace(t, "invalid")
	_, stderr, err := kubectlIn(t, admin, manifest(t, "invalid.yaml", "broken"), "-n", ns, "create", "-f", "-")
	if err == nil {
		t.Fatal("an invalid mesh was accepted")
	}
	for _, want := range []string{
		"is invalid",
		"spec.clusters[0].kubeconfigSecretRef: Forbidden",
		"spec.clusters[0].podCIDRs[0]: Invalid value: \"10.42.0.1/16\": must be in canonical form 10.42.0.0/16",
		"spec.clusters[0].wireguardPort: Invalid value: 70000",
		"spec.clusters[1].name: Invalid value: \"West_1\"",
		"spec.clusters[1].kubeconfigSecretRef: Required value",
		"spec.clusters[1].podCIDRs[0]: Invalid value: \"10.4.128.0/17\": overlaps spec.clusters[0].wireguardCIDR",
		"spec.clusters[1].wireguardCIDR: Invalid value: \"10.4.0.0/16\": overlaps spec.clusters[0].wireguardCIDR",
		"spec.clusters[1].persistentKeepalive: Invalid value: -1",
		"spec.clusters[1].granularity: Unsupported value: \"sometimes\"",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("error lacks %q:\n%s", want, stderr)
		}
	}
	// Through the aggregation layer the answer is a 422 whose causes name each field.
	body, err := yaml.YAMLToJSON([]byte(manifest(t, "invalid.yaml", "broken")))
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.RESTConfig(framework.HostCluster, admin)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Post(cfg.Host+"/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+ns+"/clustermeshes", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Details == nil {
		t.Fatalf("want 422 Invalid, got %d %s", resp.StatusCode, status.Reason)
	}
	fields := map[string]bool{}
	for _, c := range status.Details.Causes {
		fields[c.Field] = true
	}
	for _, f := range []string{"spec.clusters[0].kubeconfigSecretRef", "spec.clusters[0].podCIDRs[0]", "spec.clusters[0].wireguardPort",
		"spec.clusters[1].name", "spec.clusters[1].kubeconfigSecretRef", "spec.clusters[1].podCIDRs[0]", "spec.clusters[1].wireguardCIDR",
		"spec.clusters[1].persistentKeepalive", "spec.clusters[1].granularity"} {
		if !fields[f] {
			t.Errorf("422 causes lack %s: %v", f, fields)
		}
	}
	if out := kubectl(t, admin, "-n", ns, "get", "cmesh", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("an invalid mesh was stored: %q", out)
	}
}

func TestStatusSubresource(t *testing.T) {
	ns := namespace(t, "status")
	if _, stderr, err := kubectlIn(t, admin, manifest(t, "valid.yaml", "st"), "-n", ns, "create", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	// The reconciler owns the stored status, so the writes below are
	// server-side dry runs: they go through the same strategies and return
	// what would be stored, without racing it.
	status := `{"status":{"observedGeneration":1,"clusters":[{"name":"east","reachable":true,"nodes":3,"readyNodes":3,"locations":1,"peersDesired":1,"peersApplied":1,"skippedNodes":0}],` +
		`"conditions":[{"type":"Ready","status":"True","reason":"ByTest","message":"written by the test","lastTransitionTime":"2026-01-01T00:00:00Z"}]},` +
		`"spec":{"clusters":[{"name":"east","persistentKeepalive":99}]}}`
	out := kubectl(t, admin, "-n", ns, "patch", "cmesh", "st", "--subresource=status", "--type=merge", "--dry-run=server", "-p", status,
		"-o", "jsonpath={.metadata.generation} {.status.conditions[0].reason} {.spec.clusters[*].name}")
	if out != "1 ByTest east west" {
		t.Errorf("status write: want generation 1, the new status and the old spec, got %q", out)
	}
	out = kubectl(t, admin, "-n", ns, "patch", "cmesh", "st", "--type=merge", "--dry-run=server", "-p", `{"status":{"observedGeneration":7}}`,
		"-o", "jsonpath={.metadata.generation} {.status.observedGeneration}")
	if strings.HasSuffix(out, " 7") || !strings.HasPrefix(out, "1") {
		t.Errorf("status written through the main resource: %q", out)
	}
	kubectl(t, admin, "-n", ns, "patch", "cmesh", "st", "--type=json", "-p", `[{"op":"replace","path":"/spec/clusters/1/persistentKeepalive","value":25}]`)
	if out := kubectl(t, admin, "-n", ns, "get", "cmesh", "st", "-o", "jsonpath={.metadata.generation}"); out != "2" {
		t.Errorf("generation after a spec patch: %q", out)
	}
}
