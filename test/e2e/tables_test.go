//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The views as kubectl prints them: tables of the server's making for
// kubectl get --subresource, the typed objects for -o yaml, and the
// ?cluster= list in both encodings, applied to the member cluster.

// kubectlTable parses what kubectl get prints: a header and rows, columns
// apart by at least the three spaces of kubectl's padding (cells hold
// single spaces at most).
func kubectlTable(t *testing.T, out string) (map[string]int, [][]string) {
	t.Helper()
	sep := regexp.MustCompile(`\s{3,}`)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no table printed:\n%s", out)
	}
	cols := map[string]int{}
	for i, h := range sep.Split(strings.TrimSpace(lines[0]), -1) {
		cols[h] = i
	}
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, sep.Split(strings.TrimSpace(l), -1))
	}
	return cols, rows
}

// cell is the value of column col in row, failing when the column is absent.
func cell(t *testing.T, cols map[string]int, row []string, col string) string {
	t.Helper()
	i, ok := cols[col]
	if !ok || i >= len(row) {
		t.Fatalf("no column %s in %v (row %v)", col, cols, row)
	}
	return row[i]
}

func testTables(t *testing.T, v *viewsEnv) {
	get := func(args ...string) string {
		t.Helper()
		out, err := v.kubectl(t, framework.UserViewerA, append([]string{"-n", v.ns, "get", "clustermesh", "views"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("plan: one row per cluster, -o wide adds leaders, conflicts, warnings and the top skip reason", func(t *testing.T) {
		// Advertised and skipped nodes follow from the fixtures; the Peers
		// to write follow the reconciler, so they are compared with the
		// typed plan read around the table.
		fixed := map[string][]string{
			// CLUSTER: REACHABLE GRANULARITY ADVERTISED SKIPPED LEADERS TOP SKIP REASON
			"east":  {"true", "Location", "1", "0", "e1", "<none>"},
			"west":  {"true", "Location", "3", "3", "w1,w3", "NoPublicKey (1)"},
			"north": {"true", "Full", "2", "0", "n1,n2", "<none>"},
		}
		framework.EventuallyT(t, viewsSettle, "the plan table matching the typed plan", func() error {
			before := v.plan(t)
			cols, rows := kubectlTable(t, get("--subresource=plan", "-o", "wide"))
			after := v.plan(t)
			if len(rows) != len(fixed) {
				return fmt.Errorf("%d rows, want %d: %v", len(rows), len(fixed), rows)
			}
			for _, row := range rows {
				name := cell(t, cols, row, "CLUSTER")
				want, ok := fixed[name]
				if !ok {
					t.Fatalf("row for an unknown cluster: %v", row)
				}
				got := []string{cell(t, cols, row, "REACHABLE"), cell(t, cols, row, "GRANULARITY"), cell(t, cols, row, "ADVERTISED"),
					cell(t, cols, row, "SKIPPED"), cell(t, cols, row, "LEADERS"), cell(t, cols, row, "TOP SKIP REASON")}
				if !slices.Equal(got, want) {
					return fmt.Errorf("%s: %v, want %v", name, got, want)
				}
				diff := cell(t, cols, row, "CREATE") + "/" + cell(t, cols, row, "UPDATE") + "/" + cell(t, cols, row, "DELETE")
				if planDiff(before, name) != diff || planDiff(after, name) != diff {
					return fmt.Errorf("%s: create/update/delete %s, the typed plan says %s then %s", name, diff, planDiff(before, name), planDiff(after, name))
				}
				if r := cell(t, cols, row, "REACHED"); r != "Direct" {
					return fmt.Errorf("%s: reached %s, want Direct", name, r)
				}
				if c := cell(t, cols, row, "CONFLICTS"); c != "0" {
					return fmt.Errorf("%s: %s conflicts", name, c)
				}
				if w := cell(t, cols, row, "WARNINGS"); w != strconv.Itoa(warningsAbout(after, name)) {
					return fmt.Errorf("%s: %s warnings, the typed plan has %d", name, w, warningsAbout(after, name))
				}
			}
			return nil
		})
		// Without -o wide: the plain columns only.
		plain := get("--subresource=plan")
		t.Logf("kubectl get clustermesh views --subresource=plan:\n%s", plain)
		cols, rows := kubectlTable(t, plain)
		if len(rows) != 3 || len(cols) != 9 {
			t.Errorf("plain plan table: columns %v, %d rows", cols, len(rows))
		}
		if _, ok := cols["LEADERS"]; ok {
			t.Errorf("LEADERS without -o wide")
		}
	})

	t.Run("plan: -o yaml is the typed plan", func(t *testing.T) {
		var p meshv1alpha1.ClusterMeshPlan
		if err := yaml.UnmarshalStrict([]byte(get("--subresource=plan", "-o", "yaml")), &p); err != nil {
			t.Fatal(err)
		}
		if p.Kind != "ClusterMeshPlan" || p.Name != "views" || len(p.Clusters) != 3 || len(p.Targets) != 3 || p.GeneratedAt.IsZero() {
			t.Errorf("kind %q, name %q, %d clusters, %d targets", p.Kind, p.Name, len(p.Clusters), len(p.Targets))
		}
		if west := clusterPlan(&p, "west"); west == nil || len(west.Nodes) != 6 {
			t.Errorf("west lacks its node decisions: %+v", west)
		}
	})

	t.Run("peers: one row per desired Peer", func(t *testing.T) {
		var view meshv1alpha1.ClusterMeshPeers
		if err := json.Unmarshal([]byte(get("--subresource=peers", "-o", "json")), &view); err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{}
		for _, target := range view.Targets {
			for _, p := range target.Peers {
				want[target.Cluster+"/"+p.Name] = []string{p.Labels[planner.LabelSourceCluster], p.Annotations[planner.AnnotationSourceGroup],
					planner.PeerEndpointString(p.Spec.Endpoint), p.Spec.AllowedIPs[0], p.Spec.PublicKey}
			}
		}
		if len(want) != 10 {
			t.Fatalf("the typed view holds %d Peers, want 4 on east, 3 on west and 3 on north", len(want))
		}
		wide := get("--subresource=peers", "-o", "wide")
		t.Logf("kubectl get clustermesh views --subresource=peers -o wide:\n%s", wide)
		cols, rows := kubectlTable(t, wide)
		if len(rows) != len(want) {
			t.Fatalf("%d rows for %d Peers:\n%v", len(rows), len(want), rows)
		}
		for _, row := range rows {
			key := cell(t, cols, row, "TARGET") + "/" + cell(t, cols, row, "PEER")
			w, ok := want[key]
			if !ok {
				t.Errorf("row for a Peer the view does not hold: %v", row)
				continue
			}
			if cell(t, cols, row, "SOURCE") != w[0] || cell(t, cols, row, "GROUP") != w[1] || cell(t, cols, row, "ENDPOINT") != w[2] ||
				!strings.HasPrefix(cell(t, cols, row, "ALLOWED IPS"), w[3]) || cell(t, cols, row, "PUBLIC KEY") != w[4] {
				t.Errorf("%s: row %v, the view says %v", key, row, w)
			}
		}
		// One row the fixtures fix: east holds west's location eu-1, led by w1.
		found := false
		for _, row := range rows {
			if cell(t, cols, row, "TARGET") == "east" && cell(t, cols, row, "GROUP") == "location:eu-1" {
				found = cell(t, cols, row, "SOURCE") == "west" && cell(t, cols, row, "ENDPOINT") == "203.0.113.10:51820" &&
					strings.Contains(cell(t, cols, row, "ALLOWED IPS"), "10.52.1.0/24")
			}
		}
		if !found {
			t.Errorf("no row of west's location:eu-1 on east:\n%v", rows)
		}
		// --sort-by asks for each row's object.
		if _, err := v.kubectl(t, framework.UserViewerA, "-n", v.ns, "get", "clustermesh", "views", "--subresource=peers",
			"--sort-by=.targets[0].peers[0].metadata.name"); err != nil {
			t.Errorf("kubectl get --sort-by: %v", err)
		}
	})

	t.Run("peers?cluster= in JSON and YAML, each applied to the member cluster", func(t *testing.T) {
		path := "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/" + v.ns + "/clustermeshes/views/peers?cluster=west"
		asJSON, err := v.kubectl(t, framework.UserViewerA, "get", "--raw", path)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid([]byte(asJSON)) {
			t.Fatalf("kubectl get --raw (Accept: application/json) got no JSON:\n%s", asJSON)
		}
		client, err := kubernetes.NewForConfig(v.env.RESTConfig(framework.HostCluster, framework.UserViewerA))
		if err != nil {
			t.Fatal(err)
		}
		asYAML, err := client.CoreV1().RESTClient().Get().AbsPath(strings.Split(path, "?")[0]).Param("cluster", "west").
			SetHeader("Accept", "application/yaml").DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if json.Valid(asYAML) || !strings.Contains(string(asYAML), "kind: List") {
			t.Fatalf("Accept: application/yaml got no YAML:\n%s", asYAML)
		}
		fromYAML, err := yaml.YAMLToJSON(asYAML)
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		if err := json.Unmarshal([]byte(asJSON), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(fromYAML, &b); err != nil {
			t.Fatal(err)
		}
		if items := a["items"].([]any); len(items) != 3 || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("the JSON (%d items) and YAML lists differ:\n%s\n---\n%s", len(items), asJSON, asYAML)
		}
		for name, list := range map[string]string{"JSON": asJSON, "YAML": string(asYAML)} {
			// west is cluster 1: its API server validates the list against Kilo's CRD.
			if _, stderr, err := v.env.KubectlWithInput(context.Background(), strings.NewReader(list), 1, framework.UserAdmin,
				"apply", "--dry-run=server", "-f", "-"); err != nil {
				t.Errorf("kubectl apply --dry-run=server of the %s list: %v\n%s", name, err, stderr)
			}
		}
	})

	t.Run("peers as a table: the text formats have none", func(t *testing.T) {
		// kubectl get cannot pass ?format=; the server's answer to a table
		// request for it is checked on the raw endpoint.
		client, err := kubernetes.NewForConfig(v.env.RESTConfig(framework.HostCluster, framework.UserViewerA))
		if err != nil {
			t.Fatal(err)
		}
		body, err := client.CoreV1().RESTClient().Get().AbsPath("/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+v.ns+"/clustermeshes/views/peers").
			Param("format", "dot").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
		var status metav1.Status
		if err == nil || json.Unmarshal(body, &status) != nil || status.Code != 400 || !strings.Contains(status.Message, "no table") {
			t.Errorf("a DOT graph as a Table: %v\n%s", err, body)
		}
	})
}

// planDiff is create/update/delete of a target in a typed plan, as the
// table prints them.
func planDiff(p *meshv1alpha1.ClusterMeshPlan, cluster string) string {
	for _, tp := range p.Targets {
		if tp.Cluster == cluster {
			if tp.DiffState != meshv1alpha1.DiffStateComputed {
				return "<unknown>/<unknown>/<unknown>"
			}
			return fmt.Sprintf("%d/%d/%d", len(tp.Create), len(tp.Update), len(tp.Delete))
		}
	}
	return "no target"
}

func warningsAbout(p *meshv1alpha1.ClusterMeshPlan, cluster string) int {
	n := 0
	for _, w := range p.Warnings {
		if w.Cluster == cluster || w.Target == cluster {
			n++
		}
	}
	return n
}

// testCredentialExpiry: north is reached with a ServiceAccount token valid
// for an hour, well within the 30 days the server warns ahead; a token
// valid for 90 days draws no warning.
func testCredentialExpiry(t *testing.T, v *viewsEnv) {
	ctx := context.Background()
	credentialWarning := func(p *meshv1alpha1.ClusterMeshPlan) *meshv1alpha1.PlanIssue {
		for i, w := range p.Warnings {
			if w.Reason == planner.WarningCredentialExpiring || w.Reason == planner.WarningCredentialExpired {
				if w.Cluster != "north" {
					t.Errorf("credential warning about %s, whose credential states no expiry: %+v", w.Cluster, w)
				}
				return &p.Warnings[i]
			}
		}
		return nil
	}
	credentialsCondition := func() *metav1.Condition { return meshCondition(t, v, meshv1alpha1.ConditionCredentialsValid) }
	expiryMetric := func() (time.Time, error) {
		raw, err := framework.Scrape(ctx, v.server.DirectRESTConfig(framework.UserAdmin))
		if err != nil {
			return time.Time{}, err
		}
		sec, err := framework.MetricSum(raw, "kilo_mesh_member_credential_expiry_timestamp_seconds")
		return time.Unix(int64(sec), 0), err
	}
	// within reports whether t lies within a minute of want.
	within := func(got, want time.Time) bool { return got.Sub(want).Abs() < time.Minute }

	t.Run("an hour-long token is warned of in the plan, the status, an event and a metric", func(t *testing.T) {
		// v.north was minted with an hour's validity when the environment started.
		framework.EventuallyT(t, viewsSettle, "the credential warning in the plan", func() error {
			w := credentialWarning(v.plan(t))
			if w == nil {
				return fmt.Errorf("no credential warning")
			}
			if w.Reason != planner.WarningCredentialExpiring || !strings.Contains(w.Message, "--refresh") ||
				!strings.Contains(w.Message, "kubectl mesh join views -n "+v.ns+" --name north") {
				return fmt.Errorf("warning %+v", w)
			}
			return nil
		})
		framework.EventuallyT(t, 2*viewsSettle, "CredentialsValid False in the status", func() error {
			c := credentialsCondition()
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reconciler.ReasonCredentialsExpire ||
				!strings.Contains(c.Message, "north") || !strings.Contains(c.Message, "--refresh") {
				return fmt.Errorf("CredentialsValid %+v", c)
			}
			return nil
		})
		events, err := v.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Events(v.ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=views,reason=" + planner.WarningCredentialExpiring})
		if err != nil {
			t.Fatal(err)
		}
		if len(events.Items) == 0 || events.Items[0].Type != corev1.EventTypeWarning {
			t.Errorf("no Warning event %s: %+v", planner.WarningCredentialExpiring, events.Items)
		}
		exp, err := expiryMetric()
		if err != nil {
			t.Fatal(err)
		}
		// Minted at the start of the test run, for an hour.
		if now := time.Now(); !exp.After(now) || exp.After(now.Add(time.Hour)) {
			t.Errorf("kilo_mesh_member_credential_expiry_timestamp_seconds = %s, want within the hour", exp)
		}
	})

	t.Run("a 90-day token is not", func(t *testing.T) {
		const validity = 90 * 24 * time.Hour
		token, err := v.env.ServiceAccountToken(ctx, 2, "kilo-mesh-member", "kilo-mesh-member", validity)
		if err != nil {
			t.Fatal(err)
		}
		minted := time.Now()
		kubeconfig, err := v.env.KubeconfigFor(2, "kilo-mesh-member", token)
		if err != nil {
			t.Fatal(err)
		}
		v.setNorthKubeconfig(t, kubeconfig)
		t.Cleanup(func() { v.setNorthKubeconfig(t, v.north) })
		framework.EventuallyT(t, viewsSettle, "no credential warning in the plan", func() error {
			p := v.plan(t)
			if north := clusterPlan(p, "north"); !north.Reachable {
				return fmt.Errorf("north unreachable with the new token: %s", north.Error)
			}
			if w := credentialWarning(p); w != nil {
				return fmt.Errorf("still warned: %+v", w)
			}
			return nil
		})
		framework.EventuallyT(t, 2*viewsSettle, "CredentialsValid True and the metric at the new expiry", func() error {
			if c := credentialsCondition(); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("CredentialsValid %+v", c)
			}
			exp, err := expiryMetric()
			if err != nil {
				return err
			}
			if !within(exp, minted.Add(validity)) {
				return fmt.Errorf("metric at %s, want about %s", exp, minted.Add(validity))
			}
			return nil
		})
	})
}

// setNorthKubeconfig replaces the kubeconfig north is reached with.
func (v *viewsEnv) setNorthKubeconfig(t *testing.T, kubeconfig []byte) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "north-kubeconfig", Namespace: v.ns}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if _, err := v.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(v.ns).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
