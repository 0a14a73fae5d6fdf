package planner

import (
	"strconv"
	"testing"
	"time"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// TestCheckInExpiry: a plan says when its first counted node stops
// counting, so that the reconciler need not read every node's last-seen
// on every pass; a silent node counts for nothing, and a patched plan
// keeps the earliest moment seen until the clock passes it.
func TestCheckInExpiry(t *testing.T) {
	in := benchInput(3, 4, "location")
	c1, c2 := in.Clusters["cluster-01"], in.Clusters["cluster-02"]
	older := node(t, in, "cluster-01", "cluster-01-node-00002").DeepCopy()
	older.Annotations[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(in.Now.Unix()-40, 10)
	silent := node(t, in, "cluster-02", "cluster-02-node-00003").DeepCopy()
	silent.Annotations[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(in.Now.Add(-time.Hour).Unix(), 10)
	c1.Nodes, c2.Nodes = c1.Nodes.With(older, nodeName), c2.Nodes.With(silent, nodeName)
	in.Clusters["cluster-01"], in.Clusters["cluster-02"] = c1, c2
	wantFirst, err := kilov1alpha1.CheckInExpires(older)
	if err != nil {
		t.Fatal(err)
	}

	plan, st, err := Start(in)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.CheckInExpiry.Equal(wantFirst) {
		t.Fatalf("CheckInExpiry = %v, want %v, the older node's", plan.CheckInExpiry, wantFirst)
	}

	// The older node checks in; check-ins are not reported, so a plan a
	// second later keeps the moment it saw.
	fresh := older.DeepCopy()
	fresh.Annotations[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(in.Now.Unix(), 10)
	c1.Nodes = c1.Nodes.With(fresh, nodeName)
	in.Clusters["cluster-01"] = c1
	in.Now = in.Now.Add(time.Second)
	plan, st, _, err = st.Next(in, Changes{})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.CheckInExpiry.Equal(wantFirst) {
		t.Errorf("a second later: CheckInExpiry = %v, want the moment first seen, %v", plan.CheckInExpiry, wantFirst)
	}

	// Past that moment, the plan reads the check-ins again.
	in.Now = wantFirst.Add(time.Second)
	plan, _, _, err = st.Next(in, Changes{})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := kilov1alpha1.CheckInExpires(node(t, in, "cluster-00", "cluster-00-node-00000")); !plan.CheckInExpiry.Equal(want) {
		t.Errorf("past it: CheckInExpiry = %v, want %v, the other nodes'", plan.CheckInExpiry, want)
	}
	if whole := mustCompute(t, in); !whole.CheckInExpiry.Equal(plan.CheckInExpiry) {
		t.Errorf("past it: CheckInExpiry = %v, the whole plan's %v", plan.CheckInExpiry, whole.CheckInExpiry)
	}
}
