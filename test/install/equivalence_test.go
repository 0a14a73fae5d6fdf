//go:build e2e

package install

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// helmOnlyLabels are the labels the chart adds to what kustomize renders.
var helmOnlyLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}

// comparable returns a rendering's objects by Kind/namespace/name, without
// what only one of the two ways has by design: the Namespace (Helm's
// --create-namespace makes it), the CRDs (Helm installs its crds/ apart
// from the templates it renders), Helm's labels and checksum annotations, and
// the etcd cluster's TLS material (cert-manager's Issuers and Certificates
// in kustomize, the chart's generated Secrets; TestChartEtcdCertificates
// compares those).
func comparable(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if u.GetKind() == "Namespace" || u.GetKind() == "CustomResourceDefinition" || strings.HasPrefix(u.GetName(), "kilo-mesh-etcd-") &&
			slices.Contains([]string{"Issuer", "Certificate", "Secret"}, u.GetKind()) {
			continue
		}
		u = u.DeepCopy()
		l := u.GetLabels()
		for _, k := range helmOnlyLabels {
			delete(l, k)
		}
		u.SetLabels(l)
		stripChecksums(u.Object, "spec", "template", "metadata", "annotations")
		out[key(u.GetKind(), u.GetNamespace(), u.GetName())] = u
	}
	return out
}

func stripChecksums(obj map[string]any, fields ...string) {
	a, found, _ := unstructured.NestedStringMap(obj, fields...)
	if !found {
		return
	}
	maps.DeleteFunc(a, func(k, _ string) bool { return strings.HasPrefix(k, "checksum/") })
	if len(a) == 0 {
		unstructured.RemoveNestedField(obj, fields...)
		return
	}
	_ = unstructured.SetNestedStringMap(obj, a, fields...)
}

// TestChartEqualsKustomize: each of the chart's modes renders what the
// kustomize overlay of that mode does, so that both ways install the same
// thing and neither drifts.
func TestChartEqualsKustomize(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	all := renderings(t)
	byName := map[string]rendering{}
	for _, r := range all {
		byName[r.name] = r
	}
	for _, r := range all {
		if r.same == "" {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			helm := comparable(decode(t, render(t, ctx, r)))
			kust := comparable(decode(t, render(t, ctx, byName[r.same])))
			for _, k := range slices.Sorted(maps.Keys(kust)) {
				h, ok := helm[k]
				if !ok {
					t.Errorf("%s: in %s, not in the chart", k, r.same)
					continue
				}
				if !equalObjects(h, kust[k]) {
					t.Errorf("%s differs:\n--- %s\n%s--- chart\n%s", k, r.same, toYAML(kust[k]), toYAML(h))
				}
			}
			for _, k := range slices.Sorted(maps.Keys(helm)) {
				if _, ok := kust[k]; !ok {
					t.Errorf("%s: in the chart, not in %s", k, r.same)
				}
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ja, errA := a.MarshalJSON()
	jb, errB := b.MarshalJSON()
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func toYAML(u *unstructured.Unstructured) string {
	out, err := yaml.Marshal(u.Object)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// TestChartEtcdCertificates: the certificates the chart generates for the
// etcd cluster are those cert-manager makes for the kustomize HA overlay
// (names, addresses, usages), signed by the CA in kilo-mesh-etcd-ca; the
// pods' checksums are those of the certificates they mount; and an upgrade
// keeps them: with the Secrets in the cluster, a new rendering reads them
// back, and a missing one is made anew by the same CA.
func TestChartEtcdCertificates(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	kust := index(decode(t, render(t, ctx, rendering{name: "kustomize ha", kustomize: "overlays/ha"})))
	ha := rendering{name: "helm ha", chart: "kilo-mesh-apiserver", set: []string{"ha.enabled=true"}}
	first := etcdSecrets(t, decode(t, render(t, ctx, ha)), kust)

	const ns = "mesh-upgrade"
	if _, stderr, err := env.Kubectl(ctx, 1, admin, "create", "namespace", ns); err != nil && !strings.Contains(stderr, "AlreadyExists") {
		t.Fatalf("kubectl create namespace: %v\n%s", err, stderr)
	}
	live := rendering{name: "helm ha upgrade", chart: ha.chart, set: ha.set, namespace: ns}
	installed := renderLive(t, ctx, live, kust)
	var secrets bytes.Buffer
	for _, u := range installed.objects {
		if u.GetKind() == "Secret" {
			secrets.WriteString("---\n" + toYAML(u))
		}
	}
	if out, stderr, err := env.KubectlWithInput(ctx, &secrets, 1, admin, "apply", "-f", "-"); err != nil {
		t.Fatalf("creating the etcd Secrets: %v\n%s%s", err, out, stderr)
	}
	upgraded := renderLive(t, ctx, live, kust)
	for name, data := range installed.data {
		if !maps.Equal(upgraded.data[name], data) {
			t.Errorf("an upgrade replaced Secret %s", name)
		}
	}
	if !maps.Equal(upgraded.checksums, installed.checksums) {
		t.Errorf("an upgrade changed the pods' checksums %v to %v: it would restart etcd", installed.checksums, upgraded.checksums)
	}
	if _, stderr, err := env.Kubectl(ctx, 1, admin, "-n", ns, "delete", "secret", "kilo-mesh-etcd-client"); err != nil {
		t.Fatalf("deleting the client Secret: %v\n%s", err, stderr)
	}
	renewed := renderLive(t, ctx, live, kust)
	for _, name := range []string{"kilo-mesh-etcd-ca", "kilo-mesh-etcd-peer", "kilo-mesh-etcd-server"} {
		if !maps.Equal(renewed.data[name], installed.data[name]) {
			t.Errorf("Secret %s changed when only the client's was missing", name)
		}
	}
	if maps.Equal(renewed.data["kilo-mesh-etcd-client"], installed.data["kilo-mesh-etcd-client"]) {
		t.Error("the missing client certificate was not made anew")
	}
	if len(first.data) != 4 {
		t.Errorf("Secrets %v, want the CA's, the peer's, the server's and the client's", slices.Sorted(maps.Keys(first.data)))
	}
}

// renderLive renders with access to cluster 1 (helm's lookup reads the
// release's Secrets there) and checks the etcd Secrets it finds.
func renderLive(t *testing.T, ctx context.Context, r rendering, kust *objects) etcdTLS {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"template", "kilo-mesh", filepath.Join(root, "artifacts", "charts", r.chart), "--namespace", r.namespace, "--dry-run=server"}
	for _, s := range r.set {
		args = append(args, "--set", s)
	}
	out, stderr, err := env.Helm(ctx, 1, admin, args...)
	if err != nil {
		t.Fatalf("helm template --dry-run=server: %v\n%s", err, stderr)
	}
	return etcdSecrets(t, decode(t, out), kust)
}

// etcdTLS is what a rendering holds of the etcd cluster's TLS.
type etcdTLS struct {
	objects   []*unstructured.Unstructured
	data      map[string]map[string]string // Secret name -> data
	checksums map[string]string            // pod annotation -> value
}

// etcdSecrets checks the chart's etcd Secrets against the Certificates of
// the kustomize HA rendering kust and the pods' checksum annotations.
func etcdSecrets(t *testing.T, objs []*unstructured.Unstructured, kust *objects) etcdTLS {
	t.Helper()
	tls := etcdTLS{data: map[string]map[string]string{}, checksums: map[string]string{}}
	for _, u := range objs {
		switch {
		case u.GetKind() == "Secret" && strings.HasPrefix(u.GetName(), "kilo-mesh-etcd-"):
			tls.objects = append(tls.objects, u)
			data, _, _ := unstructured.NestedStringMap(u.Object, "data")
			tls.data[u.GetName()] = data
			if typ := str(u, "type"); typ != "kubernetes.io/tls" {
				t.Errorf("Secret %s of type %q", u.GetName(), typ)
			}
		case u.GetKind() == "Deployment" || u.GetKind() == "StatefulSet":
			a, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "annotations")
			for k, v := range a {
				tls.checksums[u.GetName()+" "+k] = v
			}
		}
	}
	ca := parseCert(t, "kilo-mesh-etcd-ca", tls.data["kilo-mesh-etcd-ca"]["tls.crt"])
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"kilo-mesh-etcd-peer", "kilo-mesh-etcd-server", "kilo-mesh-etcd-client"} {
		data := tls.data[name]
		cert := parseCert(t, name, data["tls.crt"])
		if data["ca.crt"] != tls.data["kilo-mesh-etcd-ca"]["tls.crt"] {
			t.Errorf("%s: ca.crt is not the CA's certificate", name)
		}
		want := kust.get("Certificate", "kilo-mesh-system", name)
		if want == nil {
			t.Fatalf("no Certificate %s in the kustomize HA rendering", name)
		}
		if cn := str(want, "spec", "commonName"); cert.Subject.CommonName != cn {
			t.Errorf("%s: common name %q, cert-manager's %q", name, cert.Subject.CommonName, cn)
		}
		dns, _, _ := unstructured.NestedStringSlice(want.Object, "spec", "dnsNames")
		for i := range dns {
			dns[i] = strings.ReplaceAll(dns[i], "kilo-mesh-system", namespaceOf(tls.objects))
		}
		if !slices.Equal(sortedCopy(cert.DNSNames), sortedCopy(dns)) {
			t.Errorf("%s: DNS names %v, cert-manager's %v", name, cert.DNSNames, dns)
		}
		ips, _, _ := unstructured.NestedStringSlice(want.Object, "spec", "ipAddresses")
		if got := ipStrings(cert.IPAddresses); !slices.Equal(got, sortedCopy(ips)) {
			t.Errorf("%s: IP addresses %v, cert-manager's %v", name, got, ips)
		}
		usages, _, _ := unstructured.NestedStringSlice(want.Object, "spec", "usages")
		for usage, eku := range map[string]x509.ExtKeyUsage{"server auth": x509.ExtKeyUsageServerAuth, "client auth": x509.ExtKeyUsageClientAuth} {
			if slices.Contains(usages, usage) {
				if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{eku}}); err != nil {
					t.Errorf("%s: not valid for %s under the CA: %v", name, usage, err)
				}
			}
		}
	}
	for pod, secret := range map[string]string{
		"kilo-mesh-apiserver checksum/etcd-client": "kilo-mesh-etcd-client",
		"kilo-mesh-etcd checksum/etcd-peer":        "kilo-mesh-etcd-peer",
		"kilo-mesh-etcd checksum/etcd-server":      "kilo-mesh-etcd-server",
	} {
		sum := sha256.Sum256([]byte(tls.data[secret]["tls.crt"]))
		if got := tls.checksums[pod]; got != hex.EncodeToString(sum[:]) {
			t.Errorf("%s = %q, not the checksum of %s's certificate", pod, got, secret)
		}
	}
	return tls
}

func namespaceOf(objs []*unstructured.Unstructured) string {
	if len(objs) == 0 {
		return ""
	}
	return objs[0].GetNamespace()
}

func parseCert(t *testing.T, name, b64 string) *x509.Certificate {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		t.Fatalf("%s: no PEM certificate", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cert
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return out
}

// TestMemberChart: the member chart renders exactly the identity of
// pkg/member, which artifacts/member and `kubectl mesh join` apply, and with
// services.enabled its services rights too, as the member-services
// component holds them.
func TestMemberChart(t *testing.T) {
	ctx := testContext(t, time.Minute)
	for _, tc := range []struct {
		set  []string
		want []runtime.Object
	}{
		{want: member.Objects()},
		{set: []string{"services.enabled=false"}, want: member.Objects()},
		{set: []string{"services.enabled=true"}, want: append(member.Objects(), member.ServicesObjects()...)},
	} {
		t.Run(fmt.Sprint(tc.set), func(t *testing.T) {
			got := map[string]string{}
			for _, u := range decode(t, render(t, ctx, rendering{name: "helm member", chart: "kilo-mesh-member", set: tc.set})) {
				got[key(u.GetKind(), u.GetNamespace(), u.GetName())] = toYAML(u)
			}
			want := map[string]string{}
			for _, obj := range tc.want {
				u, err := member.Unstructured(obj)
				if err != nil {
					t.Fatal(err)
				}
				want[key(u.GetKind(), u.GetNamespace(), u.GetName())] = toYAML(u)
			}
			if !maps.Equal(got, want) {
				t.Errorf("the member chart renders\n%v\npkg/member defines\n%v", fmt.Sprint(got), fmt.Sprint(want))
			}
		})
	}
}
