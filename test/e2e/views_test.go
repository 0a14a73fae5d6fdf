//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The computed views end to end: three real clusters with Kilo-annotated
// Nodes (cluster 1 in location granularity, cluster 2 in full), the real
// server behind the aggregation layer, read with kubectl get --raw.

func TestViews(t *testing.T) {
	v := startViewsEnv(t)

	t.Run("plan explains every node and group", func(t *testing.T) {
		var p *meshv1alpha1.ClusterMeshPlan
		framework.EventuallyT(t, viewsSettle, "all clusters reachable in the plan", func() error {
			p = v.plan(t)
			for _, c := range p.Clusters {
				if !c.Reachable {
					return fmt.Errorf("%s unreachable: %s", c.Name, c.Error)
				}
			}
			return nil
		})
		west := clusterPlan(p, "west")
		if west.Granularity != meshv1alpha1.GranularityLocation {
			t.Errorf("west granularity %q", west.Granularity)
		}
		var groups []string
		for _, g := range west.Groups {
			groups = append(groups, g.Name+"/"+g.Leader)
		}
		if strings.Join(groups, ",") != "location:eu-1/w1,location:eu-2/w3" {
			t.Errorf("west groups and leaders: %v", groups)
		}
		for node, reason := range map[string]string{"w1": "Advertised", "w2": "Advertised", "w3": "Advertised",
			"w4-nokey": "NoPublicKey", "w5-stale": "NotReady", "w6-outside": "PodCIDROutsideDeclared"} {
			d := nodeDecision(west, node)
			if d == nil || d.Reason != reason || d.Included != (reason == "Advertised") || d.Message == "" {
				t.Errorf("west node %s: want %s, got %+v", node, reason, d)
			}
		}
		if d := nodeDecision(west, "w2"); d.Role != meshv1alpha1.NodeRoleMember || d.Group != "location:eu-1" {
			t.Errorf("w2 should be a member of location:eu-1: %+v", d)
		}
		north := clusterPlan(p, "north")
		if north.Granularity != meshv1alpha1.GranularityFull || len(north.Groups) != 2 {
			t.Errorf("north: granularity %q, %d groups", north.Granularity, len(north.Groups))
		}
		// Every target needs one Peer per group of every other cluster.
		want := map[string]int32{"east": 4, "west": 3, "north": 3}
		for _, tp := range p.Targets {
			if tp.DiffState != meshv1alpha1.DiffStateComputed || tp.DesiredPeers != want[tp.Cluster] {
				t.Errorf("target %s: %s with %d desired Peers, want %d", tp.Cluster, tp.DiffState, tp.DesiredPeers, want[tp.Cluster])
			}
		}
	})

	t.Run("tables", func(t *testing.T) { testTables(t, v) })
	t.Run("credential expiry", func(t *testing.T) { testCredentialExpiry(t, v) })

	t.Run("peers of one cluster are what kubectl apply takes", func(t *testing.T) {
		raw, err := v.raw(t, framework.UserViewerA, "peers?cluster=east")
		if err != nil {
			t.Fatal(err)
		}
		// kubectl get --raw asks for JSON; read it as YAML.
		y, err := yaml.JSONToYAML([]byte(raw))
		if err != nil {
			t.Fatalf("peers of east are not JSON: %v\n%s", err, raw)
		}
		out := string(y)
		for _, want := range []string{"kind: List", "apiVersion: kilo.squat.ai/v1alpha1", "kind: Peer", "10.52.1.0/24", "10.52.2.0/24", "192.168.1.11/32", "10.53.0.0/16", "dns: gw.north.example.com", "ip: 203.0.113.10"} {
			if !strings.Contains(out, want) {
				t.Errorf("peers of east lack %q:\n%s", want, out)
			}
		}
		for _, unwanted := range []string{"10.52.4.0/24", "10.52.5.0/24", "10.99.6.0/24", "10.42.1.0/24"} {
			if strings.Contains(out, unwanted) {
				t.Errorf("peers of east carry %s:\n%s", unwanted, out)
			}
		}
		// The member cluster's own API server validates them against Kilo's CRD.
		if _, stderr, err := v.env.KubectlWithInput(context.Background(), strings.NewReader(out), 1, framework.UserAdmin, "apply", "--dry-run=server", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply --dry-run=server of the view: %v\n%s", err, stderr)
		}
	})

	t.Run("all peers, wireguard and dot", func(t *testing.T) {
		out, err := v.raw(t, framework.UserViewerA, "peers")
		if err != nil {
			t.Fatal(err)
		}
		var all meshv1alpha1.ClusterMeshPeers
		if err := json.Unmarshal([]byte(out), &all); err != nil {
			t.Fatal(err)
		}
		if all.Kind != "ClusterMeshPeers" || len(all.Targets) != 3 {
			t.Errorf("peers view: kind %q with %d targets", all.Kind, len(all.Targets))
		}
		wg, err := v.raw(t, framework.UserViewerA, "peers?cluster=west&format=wireguard")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(wg, "[Peer]") != 3 || !strings.Contains(wg, "Endpoint = 198.51.100.1:51820") || !strings.Contains(wg, "AllowedIPs = ") {
			t.Errorf("wireguard config of west:\n%s", wg)
		}
		dot, err := v.raw(t, framework.UserViewerA, "peers?format=dot")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(dot, "graph") || !strings.Contains(dot, "subgraph") || !strings.Contains(dot, "location:eu-1") {
			t.Errorf("dot graph:\n%s", dot)
		}
		for query, want := range map[string]string{
			"peers?format=wireguard": "needs cluster",
			"peers?cluster=nowhere":  "not a member",
			"peers?format=pdf":       "unknown format",
			"peers?clusters=west":    "unknown query parameter",
		} {
			if _, err := v.raw(t, framework.UserViewerA, query); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: want an error with %q, got %v", query, want, err)
			}
		}
	})

	t.Run("status/peers is the peers view", func(t *testing.T) { testStatusPeers(t, v) })
	t.Run("kubectl explain tells Cross from Full", func(t *testing.T) {
		out, err := v.kubectl(t, framework.UserViewerA, "explain", "clustermeshes.spec.clusters.granularity")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"tunnels only between locations", "tunnelling to every other node"} {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("kubectl explain lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("a node change shows in the next GET", func(t *testing.T) {
		_, key, err := framework.NewWireGuardKey()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.env.AnnotateNode(context.Background(), 1, "w3", map[string]string{kilov1alpha1.AnnotationKey: key}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, viewsSettle, "the new key in the peers of east", func() error {
			out, err := v.raw(t, framework.UserViewerA, "peers?cluster=east")
			if err != nil {
				return err
			}
			if !strings.Contains(out, key) {
				return fmt.Errorf("key %s not in the view yet", key)
			}
			return nil
		})
	})

	t.Run("tenants see only their namespace", func(t *testing.T) {
		for _, user := range []string{framework.UserViewerA, framework.UserTenantA, framework.UserAdmin} {
			if _, err := v.raw(t, user, "plan"); err != nil {
				t.Errorf("%s reading the plan: %v", user, err)
			}
		}
		for _, path := range []string{"plan", "peers"} {
			_, err := v.kubectl(t, framework.UserViewerA, "get", "--raw", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"+framework.NamespaceTenantB+"/clustermeshes/views/"+path)
			if err == nil || !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("viewer-a reading %s in tenant-b: %v", path, err)
			}
		}
	})

	t.Run("a rotated Secret takes effect without restart", func(t *testing.T) {
		// west now points at cluster 2: its nodes become west's.
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "west-kubeconfig", Namespace: v.ns},
			Data: map[string][]byte{"kubeconfig": v.env.KubeconfigBytes(2, framework.UserAdmin)}}
		if _, err := v.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(v.ns).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, viewsSettle, "west showing cluster 2's nodes", func() error {
			west := clusterPlan(v.plan(t), "west")
			if nodeDecision(west, "n1") == nil || nodeDecision(west, "w1") != nil {
				return fmt.Errorf("west still shows %d nodes of cluster 1", len(west.Nodes))
			}
			return nil
		})
		// west and north are one cluster now: the plan and the mesh's
		// PeersCarried condition name it.
		testSameCluster(t, v)
		secret.Data["kubeconfig"] = v.env.KubeconfigBytes(1, framework.UserAdmin)
		if _, err := v.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(v.ns).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, viewsSettle, "west back on cluster 1", func() error {
			if nodeDecision(clusterPlan(v.plan(t), "west"), "w1") == nil {
				return fmt.Errorf("west not back on cluster 1")
			}
			return nil
		})
	})

	t.Run("refused kubeconfigs say which rule", func(t *testing.T) {
		good := v.north
		for rule, mutate := range map[string]func(map[string]any){
			"ExecPlugin": func(u map[string]any) {
				u["exec"] = map[string]any{"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"}
			},
			"AuthProvider":          func(u map[string]any) { u["auth-provider"] = map[string]any{"name": "oidc"} },
			"FilePath":              func(u map[string]any) { u["tokenFile"] = "/var/run/secrets/kubernetes.io/serviceaccount/token" },
			"InsecureSkipTLSVerify": nil,
			"ProxyURL":              nil,
			"NotHTTPS":              nil,
		} {
			kubeconfig := rewriteKubeconfig(t, good, rule, mutate)
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "north-kubeconfig", Namespace: v.ns}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
			if _, err := v.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(v.ns).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			framework.EventuallyT(t, viewsSettle, rule+" named in the plan", func() error {
				north := clusterPlan(v.plan(t), "north")
				if north.Reachable || !strings.Contains(north.Error, rule) {
					return fmt.Errorf("north: reachable %v, error %q", north.Reachable, north.Error)
				}
				if strings.Contains(north.Error, v.env.Token(framework.UserAdmin)) {
					return fmt.Errorf("the error shows the token")
				}
				return nil
			})
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "north-kubeconfig", Namespace: v.ns}, Data: map[string][]byte{"kubeconfig": good}}
		if _, err := v.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(v.ns).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, viewsSettle, "north reachable again", func() error {
			if north := clusterPlan(v.plan(t), "north"); !north.Reachable {
				return fmt.Errorf("north: %s", north.Error)
			}
			return nil
		})
	})

	t.Run("a stopped member is unreachable and the rest is answered", func(t *testing.T) {
		if err := v.env.StopCluster(2); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, viewsSettle, "north unreachable", func() error {
			p := v.plan(t)
			if north := clusterPlan(p, "north"); north.Reachable {
				return fmt.Errorf("north still reachable")
			}
			if west := clusterPlan(p, "west"); !west.Reachable || len(west.Groups) != 2 {
				return fmt.Errorf("west not answered: %+v", west)
			}
			return nil
		})
		// The Peers representing north stay in the other clusters' views.
		out, err := v.raw(t, framework.UserViewerA, "peers?cluster=east")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "10.62.1.0/24") {
			t.Errorf("north's Peers dropped from east while north is unreachable:\n%s", out)
		}
		if err := v.env.StartCluster(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyT(t, viewsSettle, "north reachable again", func() error {
			if north := clusterPlan(v.plan(t), "north"); !north.Reachable {
				return fmt.Errorf("north: %s", north.Error)
			}
			return nil
		})
	})

	t.Run("admission", func(t *testing.T) {
		testAdmission(t, v)
	})
	t.Run("relay through the host", func(t *testing.T) { testRelay(t, v) })
}

// rewriteKubeconfig breaks one rule of a valid kubeconfig.
func rewriteKubeconfig(t *testing.T, good []byte, rule string, mutateUser func(map[string]any)) []byte {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal(good, &cfg); err != nil {
		t.Fatal(err)
	}
	cluster := cfg["clusters"].([]any)[0].(map[string]any)["cluster"].(map[string]any)
	user := cfg["users"].([]any)[0].(map[string]any)["user"].(map[string]any)
	switch rule {
	case "InsecureSkipTLSVerify":
		delete(cluster, "certificate-authority-data")
		cluster["insecure-skip-tls-verify"] = true
	case "ProxyURL":
		cluster["proxy-url"] = "http://127.0.0.1:3128"
	case "NotHTTPS":
		cluster["server"] = strings.Replace(cluster["server"].(string), "https://", "http://", 1)
	default:
		mutateUser(user)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
