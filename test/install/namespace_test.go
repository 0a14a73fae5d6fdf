//go:build e2e

package install

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// TestMissingLeaseNamespaceFailsAtStart: outside a pod, a leader-election
// namespace that does not exist stops the start with a message that says
// so, instead of a server that is ready and never reconciles.
func TestMissingLeaseNamespaceFailsAtStart(t *testing.T) {
	missing := framework.UniqueName("missing")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := env.StartMeshServer(ctx, framework.MeshServerOptions{
		Binary: imageBinary, SkipRegistration: true,
		ExtraArgs: []string{"--leader-elect-resource-namespace=" + missing},
	})
	if m != nil {
		defer m.Stop()
	}
	if err == nil {
		t.Fatal("the server started with a leader-election namespace that does not exist")
	}
	select {
	case <-m.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the server is still running")
	}
	// klog quotes the error; this part of it has no quotes to escape.
	if want := "does not exist: create it (kubectl create namespace " + missing + ")"; !strings.Contains(m.Logs(), want) {
		t.Errorf("log does not say %q:\n%s", want, m.LogTail(20))
	}
}
