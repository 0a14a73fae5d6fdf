package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("boom"), ExitError},
		{WithExitCode(ExitNotReady, errors.New("not ready")), ExitNotReady},
		{fmt.Errorf("wrapped: %w", WithExitCode(ExitNotReady, errors.New("not ready"))), ExitNotReady},
	} {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if WithExitCode(ExitNotReady, nil) != nil {
		t.Errorf("WithExitCode(nil) is an error")
	}
}

// Objects decoded by the client lose apiVersion and kind; printed, they
// must carry them again, or they cannot be read back or applied.
func TestPrintObjectSetsKind(t *testing.T) {
	plan := &meshv1alpha1.ClusterMeshPlan{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	var out bytes.Buffer
	if err := PrintObject(&out, plan, OutputYAML); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "apiVersion: mesh.kilo.squat.ai/v1alpha1") || !strings.Contains(out.String(), "kind: ClusterMeshPlan") {
		t.Errorf("printed:\n%s", out.String())
	}
	if plan.Kind != "" {
		t.Errorf("printing changed the object")
	}
	if err := PrintObject(&out, plan, "table"); err == nil {
		t.Errorf("an unknown format is accepted")
	}
}
