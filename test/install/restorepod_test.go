//go:build e2e

package install

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// storeFlags are the flags that name the store, the server's and the
// snapshot command's alike.
var storeFlags = []string{"--data-dir", "--etcd-servers", "--etcd-cafile", "--etcd-certfile", "--etcd-keyfile", "--etcd-prefix"}

// TestRestorePods: the restore pods of artifacts/restore reach the store
// as the server of their mode does (its image, user, store flags, and the
// volume or Secret at the same path), and a kube-apiserver takes them.
func TestRestorePods(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	const dryRun = 1
	prepareDryRunCluster(t, ctx, dryRun)
	for _, c := range []struct{ restore, install, kind string }{
		{"restore/default", "deploy", "StatefulSet"},
		{"restore/ha", "overlays/ha", "Deployment"},
	} {
		t.Run(c.restore, func(t *testing.T) {
			pods := decode(t, render(t, ctx, rendering{name: c.restore, kustomize: c.restore}))
			if len(pods) != 1 || pods[0].GetKind() != "Pod" {
				t.Fatalf("%s renders %d objects, want the Pod alone", c.restore, len(pods))
			}
			pod := pods[0]
			server := index(decode(t, render(t, ctx, rendering{name: c.install, kustomize: c.install}))).get(c.kind, framework.MeshNamespace, "kilo-mesh-apiserver")
			if server == nil {
				t.Fatalf("%s renders no %s kilo-mesh-apiserver", c.install, c.kind)
			}
			podSpec, _, _ := unstructured.NestedMap(pod.Object, "spec")
			serverSpec, _, _ := unstructured.NestedMap(server.Object, "spec", "template", "spec")
			restore, srv := onlyContainer(t, podSpec), onlyContainer(t, serverSpec)
			if restore["image"] != srv["image"] {
				t.Errorf("image %v, the server's %v", restore["image"], srv["image"])
			}
			if a, b := fmt.Sprint(podSpec["securityContext"].(map[string]any)["runAsUser"]), fmt.Sprint(serverSpec["securityContext"].(map[string]any)["runAsUser"]); a != b {
				t.Errorf("runs as %s, the server as %s", a, b)
			}
			args := stringsOf(restore["args"])
			if !slices.Equal(args[:2], []string{"snapshot", "restore"}) || args[len(args)-1] != "-" {
				t.Errorf("args %v, want snapshot restore ... -", args)
			}
			if a, b := onlyStoreFlags(args), onlyStoreFlags(stringsOf(srv["args"])); !slices.Equal(a, b) {
				t.Errorf("store flags %v, the server's %v", a, b)
			}
			statefulSet := ""
			if c.kind == "StatefulSet" {
				statefulSet = server.GetName()
			}
			for _, m := range restore["volumeMounts"].([]any) {
				path := m.(map[string]any)["mountPath"].(string)
				if path == "/tmp" {
					continue
				}
				if got, want := volumeAt(podSpec, restore, path, ""), volumeAt(serverSpec, srv, path, statefulSet); got != want || got == "" {
					t.Errorf("%s holds %q, the server's %q", path, got, want)
				}
			}
			if out, stderr, err := env.Kubectl(ctx, dryRun, admin, "apply", "--dry-run=server", "-k", "../../artifacts/"+c.restore); err != nil {
				t.Errorf("kubectl apply --dry-run=server: %v\n%s%s", err, out, stderr)
			}
		})
	}
}

func onlyContainer(t *testing.T, spec map[string]any) map[string]any {
	t.Helper()
	cs, _ := spec["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0].(map[string]any)
}

func stringsOf(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func onlyStoreFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if flag, _, _ := strings.Cut(a, "="); slices.Contains(storeFlags, flag) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// volumeAt names what container mounts at path: a claim (a StatefulSet's
// template named for its first replica) or a Secret.
func volumeAt(spec, container map[string]any, path, statefulSet string) string {
	for _, m := range container["volumeMounts"].([]any) {
		mount := m.(map[string]any)
		if mount["mountPath"] != path {
			continue
		}
		name := mount["name"]
		for _, v := range spec["volumes"].([]any) {
			vol := v.(map[string]any)
			if vol["name"] != name {
				continue
			}
			if c, ok := vol["persistentVolumeClaim"].(map[string]any); ok {
				return "claim " + fmt.Sprint(c["claimName"])
			}
			if s, ok := vol["secret"].(map[string]any); ok {
				return "secret " + fmt.Sprint(s["secretName"])
			}
		}
		if statefulSet != "" {
			return fmt.Sprintf("claim %s-%s-0", name, statefulSet)
		}
	}
	return ""
}

// TestEtcdFirst: docs/production.md moves to HA by applying the HA
// overlay's etcd alone first (-l app.kubernetes.io/name=kilo-mesh-etcd):
// the etcd cluster and its certificates, no server.
func TestEtcdFirst(t *testing.T) {
	ctx := testContext(t, time.Minute)
	const dryRun = 1
	prepareDryRunCluster(t, ctx, dryRun)
	out, stderr, err := env.Kubectl(ctx, dryRun, admin, "apply", "--dry-run=server", "-k", "../../artifacts/overlays/ha",
		"-l", "app.kubernetes.io/name=kilo-mesh-etcd", "-o", "name")
	if err != nil {
		t.Fatalf("kubectl apply -l: %v\n%s", err, stderr)
	}
	got := strings.Fields(out)
	slices.Sort(got)
	want := []string{
		"certificate.cert-manager.io/kilo-mesh-etcd-ca", "certificate.cert-manager.io/kilo-mesh-etcd-client",
		"certificate.cert-manager.io/kilo-mesh-etcd-peer", "certificate.cert-manager.io/kilo-mesh-etcd-server",
		"issuer.cert-manager.io/kilo-mesh-etcd-ca", "issuer.cert-manager.io/kilo-mesh-etcd-selfsigned",
		"poddisruptionbudget.policy/kilo-mesh-etcd", "service/kilo-mesh-etcd", "statefulset.apps/kilo-mesh-etcd",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the etcd alone is %v, want %v", got, want)
	}
}
