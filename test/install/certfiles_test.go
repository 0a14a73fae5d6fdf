//go:build e2e

package install

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// kubeletVolume writes files as the kubelet updates a Secret's volume: into
// a new timestamped directory, then an atomic rename of the ..data symlink
// to it; the files the server names are symlinks through ..data.
func kubeletVolume(t *testing.T, dir string, generation int, files map[string][]byte) {
	t.Helper()
	data := fmt.Sprintf("..%d", generation)
	if err := os.MkdirAll(filepath.Join(dir, data), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, data, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(data, filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if generation > 0 {
		if err := os.RemoveAll(filepath.Join(dir, fmt.Sprintf("..%d", generation-1))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCertificateFilesReloaded: as in the cert-manager installs, the server
// serves certificate files from a Secret's volume; when the kubelet swaps
// in a renewed certificate, the server serves it without a restart, and
// the API stays available through the aggregator.
func TestCertificateFilesReloaded(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	dir := filepath.Join(t.TempDir(), "serving")
	issue := func(generation int) []byte {
		kp, err := env.IssueMeshServingCert()
		if err != nil {
			t.Fatal(err)
		}
		kubeletVolume(t, dir, generation, map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM})
		return kp.CertPEM
	}
	original := parseBundle(t, issue(0))[0]
	// The files named last win over the framework's own.
	m := startServer(t, framework.MeshServerOptions{ExtraArgs: []string{
		"--tls-cert-file=" + filepath.Join(dir, "tls.crt"), "--tls-private-key-file=" + filepath.Join(dir, "tls.key"),
	}})
	first, err := servedCertificate(m.Port)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(original) {
		t.Fatalf("serving serial %s, not the volume's %s", first.SerialNumber, original.SerialNumber)
	}
	renewed := parseBundle(t, issue(1))[0]
	took := framework.EventuallyT(t, 2*time.Minute, "the renewed certificate served", func() error {
		c, err := servedCertificate(m.Port)
		if err != nil {
			return err
		}
		if !c.Equal(renewed) {
			return fmt.Errorf("serving serial %s (first %s, renewed %s)", c.SerialNumber, first.SerialNumber, renewed.SerialNumber)
		}
		return nil
	})
	t.Logf("the renewed certificate served %s after the volume's swap", took.Round(time.Millisecond))
	if _, err := env.Dynamic(framework.HostCluster, admin).Resource(framework.ClusterMeshGVR).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("through the aggregator after the renewal: %v", err)
	}
	if !m.Running() {
		t.Error("the server restarted")
	}
}
