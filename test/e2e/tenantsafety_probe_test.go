//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The server's probe of a member: every 5 s, 3 s at most
// (clusters.DefaultProbeInterval and DefaultProbeTimeout); two timed-out
// probes in a row are forgiven while the member's watches deliver.
const (
	tsProbeInterval = 5 * time.Second
	tsProbeTimeout  = 3 * time.Second
	tsForgiven      = 2
)

// testStreamingMember: a member that streams Node events but stops
// answering /readyz stays reachable through two timed-out probes, as an
// overloaded one would, and is unreachable at the third, with its mesh
// saying so; once it answers again it is reachable again. A member that
// stops answering and sends nothing is unreachable at its first probe, as
// before.
func (ts *tsEnv) testStreamingMember(t *testing.T) {
	fm := ts.servingMember(t, framework.FakeContent{Nodes: 3, NodeTicks: true})
	ns := ts.meshOf(t, "streaming", "10.224", "10.225", entryYAML("far", "fake", "10.200.0.0/13", "10.238.0.0/16"),
		map[string]*framework.FakeMember{"fake": fm})
	quiet := ts.servingMember(t, framework.FakeContent{Nodes: 3})
	quietNS := ts.meshOf(t, "quiet", "10.226", "10.227", entryYAML("far", "fake", "10.200.0.0/13", "10.239.0.0/16"),
		map[string]*framework.FakeMember{"fake": quiet})
	reachable := func(ns, mesh string, want bool) func() error {
		return func() error {
			for _, cs := range ts.get(t, ns, mesh).Status.Clusters {
				if cs.Name == "far" {
					if cs.Reachable != want {
						return fmt.Errorf("far of %s: reachable %v, lastError %q", mesh, cs.Reachable, cs.LastError)
					}
					return nil
				}
			}
			return fmt.Errorf("no status of far of %s yet", mesh)
		}
	}
	framework.EventuallyT(t, rcConverge, "both members reachable", func() error {
		return errors.Join(reachable(ns, "streaming", true)(), reachable(quietNS, "quiet", true)())
	})

	fm.HoldReadyz(true)
	quiet.HoldReadyz(true)
	start := time.Now()
	// As long as the frozen member of pkg/clusters' TestMemberClusters
	// takes: the first probe after the hold, and a margin.
	took := framework.EventuallyT(t, tsProbeInterval+tsProbeTimeout+5*time.Second, "the quiet member unreachable at its first probe", reachable(quietNS, "quiet", false))
	t.Logf("the quiet member unreachable in the status %s after /readyz was held (%d probes timed out by then)", took.Round(time.Millisecond), quiet.ReadyzGivenUp())
	var givenUp int64
	framework.EventuallyT(t, (tsForgiven+2)*tsProbeInterval+rcConverge, "the streaming member unreachable after its probes timed out", func() error {
		err := reachable(ns, "streaming", false)()
		givenUp = fm.ReadyzGivenUp()
		return err
	})
	mesh := ts.get(t, ns, "streaming")
	t.Logf("unreachable in the status %s after /readyz was held, when %d probes had timed out: %s",
		time.Since(start).Round(time.Millisecond), givenUp, toJSON(t, mesh.Status.Clusters))
	if givenUp < tsForgiven {
		t.Errorf("unreachable when %d probes had timed out, want not before %d while its watches streamed", givenUp, tsForgiven)
	}
	if err := clusterError(mesh, "far", "Unreachable"); err != nil {
		t.Error(err)
	}
	if err := wantCondition(mesh, meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, ""); err != nil {
		t.Error(err)
	}

	fm.HoldReadyz(false)
	quiet.HoldReadyz(false)
	framework.EventuallyT(t, rcConverge, "both reachable again once /readyz answers", func() error {
		return errors.Join(reachable(ns, "streaming", true)(), reachable(quietNS, "quiet", true)())
	})
	ts.delete(t, ns, "streaming")
	ts.delete(t, quietNS, "quiet")
}
