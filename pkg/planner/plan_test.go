package planner

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// entry returns the spec entry of a cluster, for a test to change.
func entry(in *Input, cluster string) *meshv1alpha1.ClusterEntry {
	for i := range in.Spec.Clusters {
		if in.Spec.Clusters[i].Name == cluster {
			return &in.Spec.Clusters[i]
		}
	}
	panic("no cluster " + cluster)
}

func annotate(n *corev1.Node, kv ...string) {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "<delete>" {
			delete(n.Annotations, kv[i])
			continue
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[kv[i]] = kv[i+1]
	}
}

func issueReasons(list []meshv1alpha1.PlanIssue) []string {
	var out []string
	for _, i := range list {
		out = append(out, i.Reason)
	}
	return out
}

func findIssue(list []meshv1alpha1.PlanIssue, reason string) (meshv1alpha1.PlanIssue, bool) {
	for _, i := range list {
		if i.Reason == reason {
			return i, true
		}
	}
	return meshv1alpha1.PlanIssue{}, false
}

func groupPlan(t testing.TB, p *Plan, cluster, name string) meshv1alpha1.GroupPlan {
	t.Helper()
	for _, g := range p.Groups[cluster].All() {
		if g.Name == name {
			return *g
		}
	}
	t.Fatalf("no group %s in %s", name, cluster)
	return meshv1alpha1.GroupPlan{}
}

// TestMeasured: the plan records, per cluster, the connection its snapshot
// was read through, unreachable or not, so that a plan of an entry's old
// connection is told from one of its new.
func TestMeasured(t *testing.T) {
	in := testInput(t)
	for name, conn := range map[string]string{"eu": "local", "us": "https://us#1a2b"} {
		s := in.Clusters[name]
		s.Connection = conn
		in.Clusters[name] = s
	}
	in.Clusters["us"] = ClusterSnapshot{Reachable: false, Error: "down", Connection: "https://us#1a2b"}
	p := mustCompute(t, in)
	want := map[string]string{"eu": "local", "us": "https://us#1a2b", "home": ""}
	if !maps.Equal(p.Measured, want) {
		t.Errorf("Measured = %v, want %v", p.Measured, want)
	}
}
