//go:build e2e

package install

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The install modes as users render them: kustomize's overlays and the
// chart's values. Every rendering is checked on its own (references,
// images) and applied with --dry-run=server to cluster 1, where nothing of
// the server is installed; the chart's must equal kustomize's for the same
// mode (equivalence_test.go).
type rendering struct {
	name string
	// kustomize is a directory relative to artifacts; chart a chart under
	// artifacts/charts, rendered with set (helm --set) into namespace.
	kustomize string
	chart     string
	set       []string
	namespace string
	// same names the kustomize rendering this one must equal.
	same string
	// images are the images it must name, and no other.
	images []string
}

const (
	serverImageName = "kilo-mesh-apiserver"
	etcdImageName   = "etcd"
	// otherNamespace shows that the chart follows its release namespace.
	otherNamespace = "mesh-ops"
)

// renderings lists every mode; images are filled in from the one place
// each way names them (components/images, the chart's values).
func renderings(t *testing.T) []rendering {
	t.Helper()
	k := kustomizeImages(t)
	h := chartImages(t)
	server, etcd := []string{k[serverImageName]}, []string{k[serverImageName], k[etcdImageName]}
	if h[serverImageName] != k[serverImageName] || h[etcdImageName] != k[etcdImageName] {
		t.Errorf("the chart's images %v differ from kustomize's %v", h, k)
	}
	monitoring := []string{"monitoring.serviceMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
		"monitoring.dashboard.enabled=true", "monitoring.metricsReader.enabled=true",
		"monitoring.metricsReader.subjects[0].kind=ServiceAccount", "monitoring.metricsReader.subjects[0].name=prometheus",
		"monitoring.metricsReader.subjects[0].namespace=monitoring"}
	const chart = "kilo-mesh-apiserver"
	// The API servers' addresses of testdata/network-policy.
	networkPolicy := []string{"networkPolicy.enabled=true", "networkPolicy.apiServerCIDRs={192.0.2.10/32,192.0.2.11/32}"}
	return []rendering{
		{name: "kustomize default", kustomize: "deploy", images: server},
		{name: "kustomize ha", kustomize: "overlays/ha", images: etcd},
		{name: "kustomize cert-manager", kustomize: "overlays/cert-manager", images: server},
		{name: "kustomize ha-cert-manager", kustomize: "overlays/ha-cert-manager", images: etcd},
		{name: "helm default", chart: chart, same: "kustomize default", images: server},
		{name: "helm ha", chart: chart, set: []string{"ha.enabled=true"}, same: "kustomize ha", images: etcd},
		{name: "helm cert-manager", chart: chart, set: []string{"certManager.enabled=true"}, same: "kustomize cert-manager", images: server},
		{name: "helm ha cert-manager", chart: chart, set: []string{"ha.enabled=true", "certManager.enabled=true"}, same: "kustomize ha-cert-manager", images: etcd},
		{name: "helm default monitoring", chart: chart, set: monitoring, images: server},
		{
			name: "helm ha cert-manager monitoring, own image, other namespace", chart: chart, namespace: otherNamespace,
			set:    append([]string{"ha.enabled=true", "certManager.enabled=true", "image.repository=registry.example/mesh/server", "image.tag=v9.9.9"}, monitoring...),
			images: []string{"registry.example/mesh/server:v9.9.9", k[etcdImageName]},
		},
		{name: "helm member", chart: "kilo-mesh-member"},
		{name: "helm member services", chart: "kilo-mesh-member", set: []string{"services.enabled=true"}, same: "kustomize member-services"},
		{name: "kustomize member-services", kustomize: "overlays/member-services"},
		{name: "kustomize member coredns", kustomize: "../test/install/testdata/member-coredns"},
		{name: "helm member coredns", chart: "kilo-mesh-member", set: []string{"coredns.rbac.enabled=true"}, same: "kustomize member coredns"},
		{name: "kustomize network-policy", kustomize: "../test/install/testdata/network-policy", images: server},
		{name: "helm network-policy", chart: chart, set: networkPolicy, same: "kustomize network-policy", images: server},
		{
			name: "helm ha cert-manager monitoring network-policy, pod values", chart: chart,
			set:    slices.Concat([]string{"ha.enabled=true", "certManager.enabled=true"}, networkPolicy, monitoring, podValues),
			images: etcd,
		},
		{name: "helm default pod values", chart: chart, set: podValues, images: server},
		{name: "kustomize host-services", kustomize: "../test/install/testdata/host-services", images: server},
		{name: "helm host-services", chart: chart, set: []string{"hostServices.enabled=true"}, same: "kustomize host-services", images: server},
	}
}

// TestRenderings: helm lint, then every rendering is self-contained (every
// Secret, ConfigMap, Service and volume its workloads need, every role and
// issuer it names, is in it or is a Certificate's Secret), names only its
// images, and is valid on a real kube-apiserver (dry run), cert-manager's
// and the Prometheus Operator's kinds checked against minimal CRDs of our
// own (testdata/crds).
func TestRenderings(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const fresh = 1
	prepareDryRunCluster(t, ctx, fresh)
	all := renderings(t)
	for _, r := range all {
		if r.chart == "" {
			continue
		}
		args := []string{"lint", "--strict", filepath.Join(root, "artifacts", "charts", r.chart)}
		for _, s := range r.set {
			args = append(args, "--set", s)
		}
		if out, stderr, err := env.Helm(ctx, fresh, admin, args...); err != nil {
			t.Errorf("helm lint (%s): %v\n%s%s", r.name, err, out, stderr)
		}
	}
	for _, chart := range []string{"kilo-mesh-apiserver", "kilo-mesh-member"} {
		out, stderr, err := env.Helm(ctx, fresh, admin, "show", "readme", filepath.Join(root, "artifacts", "charts", chart))
		if err != nil || !strings.HasPrefix(out, "# "+chart+"\n") {
			t.Errorf("helm show readme %s: want its README, got %v\n%s%s", chart, err, out, stderr)
		}
	}
	for _, r := range all {
		t.Run(r.name, func(t *testing.T) {
			text := render(t, ctx, r)
			objs := decode(t, text)
			for _, err := range checkReferences(objs) {
				t.Error(err)
			}
			if got := containerImages(objs); !slices.Equal(got, sortedCopy(r.images)) {
				t.Errorf("images %v, want %v", got, sortedCopy(r.images))
			}
			if r.namespace == otherNamespace && strings.Contains(text, "kilo-mesh-system") {
				t.Errorf("rendered into %s, but names kilo-mesh-system", otherNamespace)
			}
			dryRun(t, ctx, fresh, text, len(objs))
		})
	}
}

// TestDefaultInstallNeedsNothing: the default install mentions no
// cert-manager, no external etcd and no certificate file, and runs one
// replica with its volume.
func TestDefaultInstallNeedsNothing(t *testing.T) {
	ctx := testContext(t, time.Minute)
	text := render(t, ctx, rendering{kustomize: "deploy"})
	for _, banned := range []string{"cert-manager", "--tls-cert-file", "--etcd-servers", ":latest"} {
		if strings.Contains(text, banned) {
			t.Errorf("the default install mentions %q", banned)
		}
	}
	for _, u := range decode(t, text) {
		if u.GetKind() != "StatefulSet" {
			continue
		}
		if replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); replicas != 1 {
			t.Errorf("StatefulSet with %d replicas, want 1", replicas)
		}
		if claims, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates"); len(claims) != 1 {
			t.Errorf("StatefulSet with %d volumeClaimTemplates, want 1", len(claims))
		}
	}
}

// prepareDryRunCluster installs the minimal CRDs of testdata/crds and
// creates the namespaces the renderings go into: a dry run cannot check
// the objects of a namespace that does not exist.
func prepareDryRunCluster(t *testing.T, ctx context.Context, cluster int) {
	t.Helper()
	if out, stderr, err := env.Kubectl(ctx, cluster, admin, "apply", "-f", filepath.Join("testdata", "crds")); err != nil {
		t.Fatalf("installing the test CRDs: %v\n%s%s", err, out, stderr)
	}
	for _, crd := range []string{"issuers.cert-manager.io", "certificates.cert-manager.io",
		"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"} {
		if err := env.WaitCRDEstablished(ctx, cluster, crd); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{framework.MeshNamespace, otherNamespace, "kilo-mesh-member"} {
		if _, stderr, err := env.Kubectl(ctx, cluster, admin, "create", "namespace", ns); err != nil && !strings.Contains(stderr, "AlreadyExists") {
			t.Fatalf("kubectl create namespace %s: %v\n%s", ns, err, stderr)
		}
	}
}

// render makes r's manifests as a user would: kubectl kustomize, or helm
// template (the Kubernetes version of the test clusters).
func render(t *testing.T, ctx context.Context, r rendering) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr string
	if r.kustomize != "" {
		out, stderr, err = env.Kubectl(ctx, framework.HostCluster, admin, "kustomize", filepath.Join(root, "artifacts", r.kustomize))
	} else {
		ns := r.namespace
		if ns == "" {
			ns = framework.MeshNamespace
		}
		args := []string{"template", "kilo-mesh", filepath.Join(root, "artifacts", "charts", r.chart),
			"--namespace", ns, "--kube-version", framework.KubeVersion}
		for _, s := range r.set {
			args = append(args, "--set", s)
		}
		out, stderr, err = env.Helm(ctx, 1, admin, args...)
	}
	if err != nil {
		t.Fatalf("rendering %s: %v\n%s", r.name, err, stderr)
	}
	return out
}

// decode splits a multi-document YAML stream into objects (numbers as
// int64, as the API machinery reads them).
func decode(t *testing.T, text string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading the rendering: %v", err)
		}
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("decoding the rendering: %v", err)
		}
		if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			continue // a document of comments only
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatalf("decoding the rendering: %v\n%s", err, doc)
		}
		out = append(out, u)
	}
}

func containerImages(objs []*unstructured.Unstructured) []string {
	var images []string
	for _, u := range objs {
		for _, field := range []string{"containers", "initContainers"} {
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", field)
			for _, c := range cs {
				if img := c.(map[string]any)["image"].(string); !slices.Contains(images, img) {
					images = append(images, img)
				}
			}
		}
	}
	slices.Sort(images)
	return images
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// dryRun applies a rendering with --dry-run=server: every object must be
// accepted (strict field validation) and reported.
func dryRun(t *testing.T, ctx context.Context, cluster int, text string, objects int) {
	t.Helper()
	out, stderr, err := env.KubectlWithInput(ctx, bytes.NewBufferString(text), cluster, admin, "apply", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s\n%s", err, out, stderr)
	}
	if n := strings.Count(out, "(server dry run)"); n != objects {
		t.Errorf("%d objects in the dry run, want %d:\n%s", n, objects, out)
	}
}

// kustomizeImages reads the image references of artifacts/components/images.
func kustomizeImages(t *testing.T) map[string]string {
	t.Helper()
	var k struct {
		Images []struct{ Name, NewName, NewTag string }
	}
	readYAML(t, filepath.Join("artifacts", "components", "images", "kustomization.yaml"), &k)
	out := map[string]string{}
	for _, i := range k.Images {
		out[i.Name] = i.NewName + ":" + i.NewTag
	}
	return out
}

// chartImages reads the images the chart's defaults name.
func chartImages(t *testing.T) map[string]string {
	t.Helper()
	var chart struct{ AppVersion string }
	var values struct {
		Image struct{ Repository, Tag string }
		HA    struct {
			Etcd struct {
				Image struct{ Repository, Tag string }
			}
		}
	}
	dir := filepath.Join("artifacts", "charts", "kilo-mesh-apiserver")
	readYAML(t, filepath.Join(dir, "Chart.yaml"), &chart)
	readYAML(t, filepath.Join(dir, "values.yaml"), &values)
	tag := values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	return map[string]string{
		serverImageName: values.Image.Repository + ":" + tag,
		etcdImageName:   values.HA.Etcd.Image.Repository + ":" + values.HA.Etcd.Image.Tag,
	}
}

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// TestReleaseManifests: hack/release-manifests.sh (make manifests) renders
// each kustomize mode with a release's image, set the way docs/install.md
// tells users to set theirs; the result is the shipped rendering with that
// image, and still self-contained.
func TestReleaseManifests(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.example/mesh/server:v9.9.9"
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "release-manifests.sh"), image)
	cmd.Env = append(os.Environ(), "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release-manifests.sh: %v\n%s", err, b)
	}
	shipped := kustomizeImages(t)[serverImageName]
	for mode, dir := range map[string]string{"default": "deploy", "ha": "overlays/ha", "cert-manager": "overlays/cert-manager", "ha-cert-manager": "overlays/ha-cert-manager",
		"restore-default": "restore/default", "restore-ha": "restore/ha"} {
		data, err := os.ReadFile(filepath.Join(out, "kilo-mesh-apiserver-"+mode+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, string(data))
		// A restore pod uses what its install holds.
		for _, err := range checkReferences(got) {
			if !strings.HasPrefix(mode, "restore-") {
				t.Errorf("%s: %v", mode, err)
			}
		}
		want := strings.ReplaceAll(render(t, ctx, rendering{name: mode, kustomize: dir}), shipped, image)
		if string(data) != want {
			t.Errorf("kilo-mesh-apiserver-%s.yaml is not the shipped rendering with image %s", mode, image)
		}
	}
	// The namespace is an asset of its own, which no mode's file holds.
	data, err := os.ReadFile(filepath.Join(out, "kilo-mesh-apiserver-namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if objs := decode(t, string(data)); len(objs) != 1 || objs[0].GetKind() != "Namespace" || objs[0].GetName() != framework.MeshNamespace {
		t.Errorf("kilo-mesh-apiserver-namespace.yaml holds %d objects, want the Namespace %s alone", len(objs), framework.MeshNamespace)
	}
}
