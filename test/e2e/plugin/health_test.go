//go:build e2e

package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testFullyConflicted: a mesh imported over clusters whose predecessor
// Peers hold every group's key carries nothing (PublicKeyInUse both ways).
// Its health says so everywhere a user looks: the conditions, the wide
// table, status --wait (which must not succeed), and the plan's last line.
func testFullyConflicted(t *testing.T, env *framework.Env) {
	var r result
	framework.EventuallyT(t, 90*time.Second, "the imported mesh's status names the conflicts", func() error {
		r = mesh(t, env, framework.UserAdmin, "status", sampleMesh, "-n", sampleNS)
		for _, want := range []string{"PeersCarried", reconciler.ReasonConflictsBlock, "PublicKeyInUse", reconciler.ReasonNothingCarried, "nothing is carried"} {
			if !strings.Contains(r.stdout, want) {
				return fmt.Errorf("status lacks %q: %s", want, r)
			}
		}
		return nil
	})
	if r.code != 2 {
		t.Errorf("status of a mesh that carries nothing: want exit 2, got %s", r)
	}
	for _, row := range [][]string{{"Ready", "False", reconciler.ReasonNothingCarried}, {"PeersCarried", "False", reconciler.ReasonConflictsBlock}} {
		if !hasRow(r.stdout, row...) {
			t.Errorf("status lacks a row %v:\n%s", row, r)
		}
	}

	w := mesh(t, env, framework.UserAdmin, "status", sampleMesh, "-n", sampleNS, "--wait", "--timeout", "10s")
	if w.code != 2 || !strings.Contains(w.stderr, "is not Ready after 10s") {
		t.Errorf("status --wait over a fully conflicted mesh: want exit 2 after the timeout, got %s", w)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wide, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "get", "clustermeshes.mesh.kilo.squat.ai", sampleMesh, "-n", sampleNS, "-o", "wide")
	if err != nil {
		t.Fatalf("kubectl get -o wide: %v: %s", err, stderr)
	}
	if !strings.Contains(wide, "CARRIED") || !hasRow(wide, sampleMesh, "2", "False") || !strings.Contains(wide, "nothing is carried") {
		t.Errorf("kubectl get -o wide does not show the mesh unready and uncarried:\n%s", wide)
	}

	p := mustMesh(t, env, framework.UserAdmin, "plan", sampleMesh, "-n", sampleNS)
	if strings.Contains(p.stdout, "No changes") || !strings.Contains(p.stdout, "conflict(s) keep groups or Peers out of the mesh") {
		t.Errorf("plan over blocked Peers:\n%s", p)
	}
}
