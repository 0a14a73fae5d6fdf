//go:build e2e

package install

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// podValues set every pod-level value of the chart's server.
var podValues = []string{
	`podAnnotations.example\.com/owner=mesh-team`,
	"podLabels.team=mesh",
	`serviceAccount.annotations.iam\.example\.com/role=kilo-mesh`,
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=kubernetes.io/os",
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=In",
	"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]=linux",
}

// podValuesAffinity is the affinity podValues sets.
const podValuesAffinity = `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/os","operator":"In","values":["linux"]}]}]}}}`

// TestChartValues: affinity, podAnnotations, podLabels and the
// ServiceAccount's annotations reach the server's pods and ServiceAccount
// in every mode (the etcd members' pods stay as they are), next to what the
// chart sets itself; values that would break the install are refused with
// the value's name. The renderings with these values pass a real
// kube-apiserver's dry run in TestRenderings.
func TestChartValues(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	for _, tc := range []struct {
		name, kind string
		set        []string
	}{
		{name: "default", kind: "StatefulSet", set: podValues},
		{name: "ha", kind: "Deployment", set: append([]string{"ha.enabled=true"}, podValues...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := index(decode(t, render(t, ctx, rendering{name: tc.name, chart: "kilo-mesh-apiserver", set: tc.set})))
			ns := framework.MeshNamespace
			w := o.get(tc.kind, ns, "kilo-mesh-apiserver")
			if w == nil {
				t.Fatalf("no %s kilo-mesh-apiserver", tc.kind)
			}
			podLabels, _, _ := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels")
			selector, _, _ := unstructured.NestedStringMap(w.Object, "spec", "selector", "matchLabels")
			if podLabels["team"] != "mesh" || !labels.SelectorFromSet(selector).Matches(labels.Set(podLabels)) {
				t.Errorf("pod labels %v: want team=mesh and the selector %v", podLabels, selector)
			}
			annotations, _, _ := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "annotations")
			if annotations["example.com/owner"] != "mesh-team" {
				t.Errorf("pod annotations %v: want example.com/owner=mesh-team", annotations)
			}
			if _, ha := annotations["checksum/etcd-client"]; ha != (tc.kind == "Deployment") {
				t.Errorf("pod annotations %v: the chart's own checksum is lost or misplaced", annotations)
			}
			affinity, _, _ := unstructured.NestedMap(w.Object, "spec", "template", "spec", "affinity")
			if got, _ := json.Marshal(affinity); !bytes.Equal(got, []byte(podValuesAffinity)) {
				t.Errorf("affinity %s, want %s", got, podValuesAffinity)
			}
			if spread, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "topologySpreadConstraints"); (len(spread) > 0) != (tc.kind == "Deployment") {
				t.Errorf("zone spread %v: HA keeps it, the default has none", spread)
			}
			if sa := o.get("ServiceAccount", ns, "kilo-mesh-apiserver"); sa == nil || sa.GetAnnotations()["iam.example.com/role"] != "kilo-mesh" {
				t.Errorf("the ServiceAccount lacks the annotation iam.example.com/role=kilo-mesh")
			}
			if etcd := o.get("StatefulSet", ns, "kilo-mesh-etcd"); etcd != nil {
				l, _, _ := unstructured.NestedStringMap(etcd.Object, "spec", "template", "metadata", "labels")
				if _, ok := l["team"]; ok {
					t.Errorf("the etcd members got the server's pod labels: %v", l)
				}
			}
		})
	}

	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		set        []string
	}{
		{name: "a pod label that selects the pods", want: "podLabels", set: []string{`podLabels.app\.kubernetes\.io/name=other`}},
		{name: "a NetworkPolicy without the API servers", want: "networkPolicy.apiServerCIDRs", set: []string{"networkPolicy.enabled=true"}},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			args := []string{"template", "kilo-mesh", filepath.Join(root, "artifacts", "charts", "kilo-mesh-apiserver"), "--namespace", framework.MeshNamespace}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, stderr, err := env.Helm(ctx, 1, admin, args...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("helm template --set %v: want an error naming %s, got %v\n%s%s", tc.set, tc.want, err, stderr, out)
			}
		})
	}
}

// TestNetworkPolicy: the NetworkPolicies of every mode select the server's
// pods and nothing else; they let in only the API servers and monitoring,
// on the server's port, and let out only DNS, the API servers on their
// ports, the etcd members (HA) and the member servers' networks; no rule
// is left without peers, which would allow everything. Kustomize's
// component, left with its placeholder, is refused naming the field.
func TestNetworkPolicy(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	prepareDryRunCluster(t, ctx, 1)
	apiServers := []string{"192.0.2.10/32", "192.0.2.11/32"}
	byName := map[string]rendering{}
	for _, r := range renderings(t) {
		byName[r.name] = r
	}
	for _, name := range []string{"kustomize network-policy", "helm network-policy", "helm ha cert-manager monitoring network-policy, pod values"} {
		t.Run(name, func(t *testing.T) {
			o := index(decode(t, render(t, ctx, byName[name])))
			policies := o.ofKind("NetworkPolicy")
			if len(policies) != 2 {
				t.Fatalf("%d NetworkPolicies, want 2", len(policies))
			}
			var server, etcd map[string]string
			for _, w := range o.ofKind("Deployment", "StatefulSet") {
				l, _, _ := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels")
				if strings.HasPrefix(w.GetName(), "kilo-mesh-etcd") {
					etcd = l
				} else {
					server = l
				}
			}
			var from, to []string
			for _, p := range policies {
				sel, _, _ := unstructured.NestedStringMap(p.Object, "spec", "podSelector", "matchLabels")
				if !labels.SelectorFromSet(sel).Matches(labels.Set(server)) || (etcd != nil && labels.SelectorFromSet(sel).Matches(labels.Set(etcd))) {
					t.Errorf("%s selects %v: want the server's pods %v and no etcd member", p.GetName(), sel, server)
				}
				for _, dir := range []struct {
					field, peers string
					into         *[]string
				}{{"ingress", "from", &from}, {"egress", "to", &to}} {
					rules, _, _ := unstructured.NestedSlice(p.Object, "spec", dir.field)
					for _, r := range rules {
						r := r.(map[string]any)
						peers, _ := r[dir.peers].([]any)
						if len(peers) == 0 {
							t.Errorf("%s: a %s rule without peers allows everything: %v", p.GetName(), dir.field, r)
						}
						for _, peer := range peers {
							*dir.into = append(*dir.into, describePeer(peer.(map[string]any), r["ports"], etcd))
						}
					}
				}
			}
			wantFrom := []string{"monitoring/prometheus:8443"}
			wantTo := []string{"kube-system/kube-dns:53,53", "0.0.0.0/0 but private:all", "::/0 but private:all", "etcd:2379"}
			for _, c := range apiServers {
				wantFrom = append(wantFrom, c+":8443")
				wantTo = append(wantTo, c+":443,6443")
			}
			if slices.Sort(from); !slices.Equal(from, sortedCopy(wantFrom)) {
				t.Errorf("ingress from %v, want %v", from, sortedCopy(wantFrom))
			}
			if slices.Sort(to); !slices.Equal(to, sortedCopy(wantTo)) {
				t.Errorf("egress to %v, want %v", to, sortedCopy(wantTo))
			}
		})
	}
	t.Run("kustomize component with its placeholder", func(t *testing.T) {
		text := render(t, ctx, byName["kustomize network-policy"])
		text = strings.ReplaceAll(strings.ReplaceAll(text, "192.0.2.10/32", "API-SERVER-CIDR"), "192.0.2.11/32", "API-SERVER-CIDR")
		out, stderr, err := env.KubectlWithInput(ctx, bytes.NewBufferString(text), 1, admin, "apply", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, "ipBlock.cidr") || !strings.Contains(stderr, "API-SERVER-CIDR") {
			t.Errorf("the placeholder was not refused naming ipBlock.cidr: %v\n%s%s", err, out, stderr)
		}
	})
}

// describePeer writes a NetworkPolicy peer and its rule's ports for
// comparison: CIDR, namespace/app of a selected pod, or "etcd" for the
// etcd members' pods.
func describePeer(peer map[string]any, ports any, etcd map[string]string) string {
	var ps []string
	list, _ := ports.([]any)
	for _, p := range list {
		ps = append(ps, strings.TrimSpace(strings.Trim(toJSON(p.(map[string]any)["port"]), `"`)))
	}
	port := "all"
	if len(ps) > 0 {
		port = strings.Join(ps, ",")
	}
	if b, ok := peer["ipBlock"].(map[string]any); ok {
		cidr := b["cidr"].(string)
		except, _, _ := unstructured.NestedStringSlice(b, "except")
		if len(except) == 0 {
			return cidr + ":" + port
		}
		for _, p := range privateRanges[cidr] {
			if !slices.Contains(except, p) {
				return cidr + " but " + strings.Join(except, ",") + ":" + port
			}
		}
		return cidr + " but private:" + port
	}
	ns, _, _ := unstructured.NestedString(peer, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
	pod, _, _ := unstructured.NestedStringMap(peer, "podSelector", "matchLabels")
	// Without HA no etcd member runs: the rule names the HA modes' labels.
	if ns == "" && (etcd != nil && labels.SelectorFromSet(pod).Matches(labels.Set(etcd)) ||
		etcd == nil && pod["app.kubernetes.io/name"] == "kilo-mesh-etcd") {
		return "etcd:" + port
	}
	app := pod["app.kubernetes.io/name"]
	if app == "" {
		app = pod["k8s-app"]
	}
	return ns + "/" + app + ":" + port
}

// privateRanges are the ranges that the member servers' default ipBlocks
// must leave out, as --member-server-cidrs refuses them by default:
// private, loopback, link-local (cloud metadata) and shared addresses.
var privateRanges = map[string][]string{
	"0.0.0.0/0": {"10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"},
	"::/0":      {"::1/128", "fc00::/7", "fe80::/10"},
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
