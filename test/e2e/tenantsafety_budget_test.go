//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Members of the namespace budget attack: each is under every limit on one
// member (4,000 Nodes of 8 KiB, about 38 MiB kept against
// --max-member-cache-mib=64), and all of them are far over what the server
// keeps of one namespace (tsNamespaceCacheMiB).
const (
	hoardMembers    = 12
	hoardNodes      = 4000
	hoardLabelBytes = 8 << 10
	// hoardMemberMiB is less than what the server keeps of each: their
	// labels alone.
	hoardMemberMiB = hoardNodes * hoardLabelBytes >> 20
	// The innocent tenant's member: 1,000 such Nodes, about 10 MiB.
	innocentNodes = 1000
)

// testNamespaceBudget: one tenant names many heavy members, each within
// the limits on one member: the server keeps no more of them than the
// namespace's share of its memory, says so on the tenant's mesh (a
// condition and an event), stays under its container's limit, and another
// tenant's meshes go on, its own heavy member included.
func (ts *tsEnv) testNamespaceBudget(first *meshv1alpha1.ClusterMesh) func(t *testing.T) {
	return func(t *testing.T) {
		members := map[string]*framework.FakeMember{}
		var entries strings.Builder
		for i := range hoardMembers {
			name := fmt.Sprintf("m%02d", i)
			members[name] = ts.servingMember(t, framework.FakeContent{Nodes: hoardNodes, NodeLabelBytes: hoardLabelBytes})
			entries.WriteString(entryYAML(name, name, fmt.Sprintf("10.186.%d.0/20", 16*i), fmt.Sprintf("10.187.%d.0/20", 16*i)))
		}
		innocent := ts.servingMember(t, framework.FakeContent{Nodes: innocentNodes, NodeLabelBytes: hoardLabelBytes})

		before := ts.restartForMemory(t, first)
		samples := ts.sampleMemory(t)
		ns := ts.meshOf(t, "hoard-ns", "10.184", "10.185", entries.String(), members)
		var refused []string
		framework.EventuallyT(t, 2*rcConverge, "the namespace's share reported", func() error {
			refused = nil
			m := ts.get(t, ns, "hoard-ns")
			if len(m.Status.Clusters) < hoardMembers+1 {
				return fmt.Errorf("status of %d clusters", len(m.Status.Clusters))
			}
			for _, cs := range m.Status.Clusters {
				if strings.Contains(cs.LastError, string(memberaccess.ErrNamespaceBudgetExceeded)) {
					refused = append(refused, cs.Name)
				}
			}
			// The share holds a few of them at most: the others are refused.
			if len(refused) < hoardMembers-tsNamespaceCacheMiB/hoardMemberMiB {
				return fmt.Errorf("%d of %d members over the namespace's share: %v", len(refused), hoardMembers, refused)
			}
			return nil
		})
		if err := wantCondition(ts.get(t, ns, "hoard-ns"), meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, ""); err != nil {
			t.Error(err)
		}
		framework.EventuallyT(t, rcConverge, "an event on the mesh", func() error {
			for _, e := range ts.events(t, ns) {
				if e.Reason == string(memberaccess.ErrNamespaceBudgetExceeded) && e.InvolvedObject.Name == "hoard-ns" {
					return nil
				}
			}
			return errors.New("no NamespaceMemberBudgetExceeded event")
		})

		// Another tenant, with a heavy member of its own, is not refused
		// for the first one's members.
		ins := ts.meshOf(t, "innocent", "10.188", "10.189", entryYAML("far", "far", "10.190.0.0/16", "10.191.0.0/16"),
			map[string]*framework.FakeMember{"far": innocent})
		framework.EventuallyT(t, rcConverge, "the innocent tenant's member used", func() error {
			for _, cs := range ts.get(t, ins, "innocent").Status.Clusters {
				if cs.Name != "far" {
					continue
				}
				if cs.Nodes != innocentNodes || strings.Contains(cs.LastError, "Exceeded") {
					return fmt.Errorf("cluster far: %d nodes, lastError %q", cs.Nodes, cs.LastError)
				}
				return nil
			}
			return errors.New("no status of cluster far")
		})
		ts.othersUnaffected(t, first)
		if plan := ts.plan(t, ts.ns, "first"); !strings.Contains(plan, `"clusters"`) {
			t.Errorf("the other tenant's plan: %.300s", plan)
		}

		anon := samples()
		after := ts.memory(t)
		var served int64
		for _, fm := range members {
			served += fm.LargestAnswer() * hoardNodes / 500
		}
		t.Logf("server memory: %s before; under attack up to %d MiB anonymous; %s after. "+
			"%d members of %d Nodes of %d KiB (%d MiB of Nodes served), %d refused for the namespace's share: %v",
			before, anon>>20, after, hoardMembers, hoardNodes, hoardLabelBytes>>10, served>>20, len(refused), refused)
		ts.underDeployedLimit(t, anon)
		ts.delete(t, ns, "hoard-ns")
		ts.delete(t, ins, "innocent")
	}
}
