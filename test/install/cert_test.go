//go:build e2e

package install

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/servingcert"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Short lives for the rotation tests: a serving certificate is renewed
// every 6 s, a CA every 16 s, and an old CA stays trusted 8 s after that.
var shortLives = []string{"--serving-cert-validity=9s", "--serving-cert-ca-validity=24s"}

// emptyServingCertSecret empties the Secret as a fresh install ships it.
func emptyServingCertSecret(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := env.InstallServerRBAC(ctx); err != nil {
		t.Fatal(err)
	}
	secrets := env.Client(framework.HostCluster, admin).CoreV1().Secrets(framework.MeshNamespace)
	s, err := secrets.Get(ctx, framework.MeshServingCertSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = nil
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// servedCertificate is the leaf a server presents on its port.
func servedCertificate(port int) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
		// Whatever is served is recorded; whether it verifies is checked
		// against the APIService's bundle.
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func parseBundle(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return certs
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiServiceState is the caBundle and the Available condition.
func apiServiceState(ctx context.Context) (bundle []byte, available bool, err error) {
	obj, err := env.Dynamic(framework.HostCluster, admin).Resource(apiServiceGVR).Get(ctx, framework.APIServiceName, metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	b64, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
	if bundle, err = base64.StdEncoding.DecodeString(b64); err != nil {
		return nil, false, err
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			available = m["status"] == "True"
		}
	}
	return bundle, available, nil
}

// TestSelfManagedCertificate: a server started without certificate flags
// behind an APIService registered without a caBundle becomes Available (the
// framework waits for it), and stays so, every request through the
// aggregator answered, across serving certificate renewals and CA
// rotations with short lives.
func TestSelfManagedCertificate(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	emptyServingCertSecret(t, ctx)
	m := startServer(t, framework.MeshServerOptions{SelfManagedCert: true, ExternalEtcd: true, ExtraArgs: shortLives})

	meshes := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR).Namespace("default")
	leaves := map[string]bool{}
	issuers := map[string]bool{}
	maxBundle, requests, failures := 0, 0, 0
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		requests++
		if _, err := meshes.List(ctx, metav1.ListOptions{}); err != nil {
			failures++
			t.Errorf("%s: through the aggregator: %v", time.Now().Format(time.TimeOnly), err)
		}
		bundle, available, err := apiServiceState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !available {
			t.Errorf("%s: the APIService is not Available", time.Now().Format(time.TimeOnly))
		}
		cas := parseBundle(t, bundle)
		maxBundle = max(maxBundle, len(cas))
		leaf, err := servedCertificate(m.Port)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		leaves[leaf.SerialNumber.String()] = true
		issuers[leaf.Issuer.CommonName] = true
		// What is served verifies against what the APIService holds.
		pool := x509.NewCertPool()
		for _, ca := range cas {
			pool.AddCert(ca)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: framework.MeshServiceDNSName, Roots: pool}); err != nil {
			t.Errorf("%s: the served certificate does not verify against the APIService's caBundle: %v", time.Now().Format(time.TimeOnly), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d requests through the aggregator, %d failed; %d serving certificates from %d CAs; up to %d CAs in the caBundle",
		requests, failures, len(leaves), len(issuers), maxBundle)
	if len(leaves) < 5 || len(issuers) < 2 {
		t.Errorf("in 45 s: %d serving certificates from %d CAs, want renewals every 6 s and a CA rotation every 16 s", len(leaves), len(issuers))
	}
	if maxBundle != 2 {
		t.Errorf("the caBundle held at most %d CAs, want 2 while an old CA is still valid", maxBundle)
	}
	secret, err := env.Client(framework.HostCluster, admin).CoreV1().Secrets(framework.MeshNamespace).Get(ctx, framework.MeshServingCertSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bundle, _, _ := apiServiceState(ctx); !bytes.Equal(bundle, secret.Data[servingcert.CABundleKey]) {
		t.Error("the APIService's caBundle is not the Secret's")
	}
}

// TestReplicasShareOneCertificate: two replicas started together on an
// empty Secret serve the same certificate, from one CA, and still do after
// it was renewed.
func TestReplicasShareOneCertificate(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	emptyServingCertSecret(t, ctx)
	lease := "--leader-elect-resource-name=" + framework.UniqueName("lease")
	var servers [2]*framework.MeshServer
	var errs [2]error
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() {
			servers[i], errs[i] = tryStartServer(t, framework.MeshServerOptions{
				SelfManagedCert: true, ExternalEtcd: true, SkipRegistration: i == 1,
				ExtraArgs: append([]string{lease}, shortLives...),
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	same := func() (*x509.Certificate, error) {
		a, err := servedCertificate(servers[0].Port)
		if err != nil {
			return nil, err
		}
		b, err := servedCertificate(servers[1].Port)
		if err != nil {
			return nil, err
		}
		if !a.Equal(b) {
			return nil, fmt.Errorf("the replicas serve different certificates (serials %s and %s)", a.SerialNumber, b.SerialNumber)
		}
		return a, nil
	}
	var first *x509.Certificate
	if err := framework.Eventually(ctx, 100*time.Millisecond, 5*time.Second, func(context.Context) (err error) {
		first, err = same()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	secret, err := env.Client(framework.HostCluster, admin).CoreV1().Secrets(framework.MeshNamespace).Get(ctx, framework.MeshServingCertSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cas := parseBundle(t, secret.Data[servingcert.CABundleKey]); len(cas) != 1 {
		t.Errorf("%d CAs in the Secret after two replicas started, want 1", len(cas))
	}
	// After the renewal (6 s) both follow the Secret.
	time.Sleep(7 * time.Second)
	if err := framework.Eventually(ctx, 100*time.Millisecond, 5*time.Second, func(context.Context) error {
		now, err := same()
		if err == nil && now.Equal(first) {
			return fmt.Errorf("the certificate was not renewed")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
