package clusters

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

func fullNode() *corev1.Node {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "n1", UID: "uid-1", ResourceVersion: "42", CreationTimestamp: now,
			Labels: map[string]string{"topology.kubernetes.io/region": "eu"},
			Annotations: map[string]string{
				"kilo.squat.ai/key":      "abc=",
				lastAppliedAnnotation:    `{"a":"huge"}`,
				"kilo.squat.ai/location": "eu",
			},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
			OwnerReferences: []metav1.OwnerReference{{Name: "x"}},
		},
		Spec: corev1.NodeSpec{
			PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:1::/64"},
			ProviderID: "aws:///eu/i-123", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.1"}},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
			},
			Images:   []corev1.ContainerImage{{Names: []string{"registry.example.com/app:v1"}, SizeBytes: 1 << 20}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", MachineID: "m"},
		},
	}
}

func TestSlimNode(t *testing.T) {
	in := fullNode()
	got, weight := slimNode(in)
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "n1", UID: "uid-1", ResourceVersion: "42", CreationTimestamp: in.CreationTimestamp,
			Labels:      in.Labels,
			Annotations: map[string]string{"kilo.squat.ai/key": "abc=", "kilo.squat.ai/location": "eu"},
		},
		Spec:   corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:1::/64"}},
		Status: corev1.NodeStatus{Addresses: in.Status.Addresses},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("slim node:\n got %+v\nwant %+v", got, want)
	}
	if weight < objectOverhead || weight > 2*objectOverhead {
		t.Errorf("weight %d of a small Node", weight)
	}
	if _, ok := in.Annotations[lastAppliedAnnotation]; !ok {
		t.Error("the input's annotations were modified")
	}
	if again, w := slimNode(got); !equality.Semantic.DeepEqual(again, got) || w != weight {
		t.Error("slimNode is not idempotent")
	}

	// Weight in labels or Kilo annotations (the other annotations are not
	// kept, so they weigh nothing) makes a stub that says why.
	for name, fatten := range map[string]func(*corev1.Node){
		"label": func(n *corev1.Node) { n.Labels["fat"] = strings.Repeat("x", maxNodeBytes) },
		"kilo annotation": func(n *corev1.Node) {
			n.Annotations["kilo.squat.ai/allowed-location-ips"] = strings.Repeat("x", maxNodeBytes)
		},
	} {
		n := fullNode()
		fatten(n)
		stub, w := slimNode(n)
		why := stub.Annotations[meshv1alpha1.AnnotationNodeTooLarge]
		if stub.Name != "n1" || stub.UID != "uid-1" || len(stub.Labels) != 0 || len(stub.Annotations) != 1 || !strings.Contains(why, "32 KiB") || w > 2*objectOverhead {
			t.Errorf("%s: stub %+v weighing %d", name, stub, w)
		}
		if again, _ := slimNode(stub); !equality.Semantic.DeepEqual(again, stub) {
			t.Errorf("%s: a stub is not kept as it is", name)
		}
	}
	light := fullNode()
	light.Annotations["node.alpha.kubernetes.io/huge"] = strings.Repeat("x", 4*maxNodeBytes)
	if n, _ := slimNode(light); n.Annotations[meshv1alpha1.AnnotationNodeTooLarge] != "" {
		t.Error("an annotation that is not kept made the Node a stub")
	}
	// A member cannot smuggle text through the marker.
	forged := fullNode()
	forged.Annotations[meshv1alpha1.AnnotationNodeTooLarge] = strings.Repeat("y", 10000)
	if n, _ := slimNode(forged); len(n.Annotations[meshv1alpha1.AnnotationNodeTooLarge]) > memberaccess.MaxErrorText {
		t.Error("a forged marker is kept at any length")
	}
}

func TestUnchanged(t *testing.T) {
	base, _ := slimNode(fullNode())
	heartbeat := fullNode()
	heartbeat.ResourceVersion = "43"
	heartbeat.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(time.Unix(1700000100, 0))
	heartbeat.Status.Images = nil
	hb, _ := slimNode(heartbeat)
	now := time.Now()
	if !unchanged(base, hb, now) {
		t.Error("a heartbeat-only update counts as a change")
	}
	annotated := fullNode()
	annotated.ResourceVersion = "44"
	annotated.Annotations["kilo.squat.ai/endpoint"] = "203.0.113.99:51820"
	an, _ := slimNode(annotated)
	if unchanged(base, an, now) {
		t.Error("an annotation change is not seen")
	}

	// kg's check-ins: routine on a live node, news on a silent one.
	checkIn := func(lastSeen time.Time) *corev1.Node {
		n := base.DeepCopy()
		n.Annotations["kilo.squat.ai/last-seen"] = strconv.FormatInt(lastSeen.Unix(), 10)
		return n
	}
	if !unchanged(checkIn(now.Add(-30*time.Second)), checkIn(now), now) {
		t.Error("a routine check-in of a live node counts as a change")
	}
	if unchanged(checkIn(now.Add(-90*time.Second)), checkIn(now), now) {
		t.Error("a silent node checking in again is not seen")
	}
	if unchanged(checkIn(now.Add(-30*time.Second)), checkIn(now.Add(-2*time.Minute)), now) {
		t.Error("a last-seen moving into the past is not seen")
	}
	moved := checkIn(now)
	moved.Annotations["kilo.squat.ai/endpoint"] = "203.0.113.98:51820"
	if unchanged(checkIn(now.Add(-30*time.Second)), moved, now) {
		t.Error("a check-in that also changes the endpoint is not seen")
	}

	p1 := &kilov1alpha1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1"}, Spec: kilov1alpha1.PeerSpec{PublicKey: "k"}}
	p2 := p1.DeepCopy()
	p2.ResourceVersion = "2"
	if !unchanged(p1, p2, now) {
		t.Error("a Peer that differs only in resourceVersion counts as a change")
	}
	p2.Spec.AllowedIPs = []string{"10.0.0.0/24"}
	if unchanged(p1, p2, now) {
		t.Error("a Peer spec change is not seen")
	}
	if unchanged(base, p1, now) {
		t.Error("objects of different kinds compare as unchanged")
	}
}

func TestSlimPeer(t *testing.T) {
	in := &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p1", UID: "u1", ResourceVersion: "7",
			Labels:        map[string]string{"mesh.kilo.squat.ai/mesh-uid": "m"},
			Annotations:   map[string]string{lastAppliedAnnotation: "{}", "mesh.kilo.squat.ai/source-group": "location:a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}},
		},
		Spec: kilov1alpha1.PeerSpec{
			AllowedIPs: []string{"10.1.0.0/24", "10.4.0.1/32"}, PublicKey: "key=", PersistentKeepalive: 25,
			Endpoint: &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820},
		},
	}
	got, weight := slimPeer(in)
	want := &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: "p1", UID: "u1", ResourceVersion: "7",
			Labels: in.Labels, Annotations: map[string]string{"mesh.kilo.squat.ai/source-group": "location:a"}},
		Spec: in.Spec,
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if again, w := slimPeer(got); !equality.Semantic.DeepEqual(again, got) || w != weight {
		t.Error("slimPeer is not idempotent")
	}
	many := in.DeepCopy()
	for i := range 1000 {
		many.Spec.AllowedIPs = append(many.Spec.AllowedIPs, fmt.Sprintf("10.9.%d.%d/32", i/256, i%256))
	}
	if _, w := slimPeer(many); w < weight+1000*(entryOverhead+12) {
		t.Errorf("1,000 allowed IPs more weigh %d, %d without", w, weight)
	}
}

func TestTransformSecret(t *testing.T) {
	in := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "3",
			Annotations: map[string]string{lastAppliedAnnotation: `{"data":{"kubeconfig":"..."}}`}, Labels: map[string]string{"a": "b"}},
		Data: map[string][]byte{"kubeconfig": []byte("x")},
	}
	got, _ := transformSecret(in)
	s := got.(*corev1.Secret)
	if s.Annotations != nil || s.Labels != nil || string(s.Data["kubeconfig"]) != "x" || s.Name != "s" || s.Namespace != "ns" || s.ResourceVersion != "3" {
		t.Errorf("got %+v", s)
	}
}

func TestWithoutLastApplied(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in, out map[string]string
		copied  bool
	}{
		{"none: the map itself", map[string]string{"a": "1"}, map[string]string{"a": "1"}, false},
		{"nil", nil, nil, false},
		{"kubectl's copy dropped, into a new map", map[string]string{"a": "1", lastAppliedAnnotation: "{}"}, map[string]string{"a": "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.in)
			got := withoutLastApplied(tc.in)
			if !equality.Semantic.DeepEqual(got, tc.out) {
				t.Errorf("withoutLastApplied = %v, want %v", got, tc.out)
			}
			if len(tc.in) != before {
				t.Errorf("the cache's map was changed: %v", tc.in)
			}
			if copied := tc.in != nil && fmt.Sprintf("%p", got) != fmt.Sprintf("%p", tc.in); copied != tc.copied {
				t.Errorf("copied %v, want %v", copied, tc.copied)
			}
		})
	}
}

// BenchmarkUnchangedCheckIn: what kg's routine check-in, the most frequent
// event a member cache gets (every node every 30 s), costs to recognise.
func BenchmarkUnchangedCheckIn(b *testing.B) {
	now := time.Now()
	old, _ := slimNode(fullNode())
	old.Annotations[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(now.Add(-30*time.Second).Unix(), 10)
	checkIn := old.DeepCopy()
	checkIn.ResourceVersion = "44"
	checkIn.Annotations[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(now.Unix(), 10)
	for b.Loop() {
		if !unchanged(old, checkIn, now) {
			b.Fatal("a routine check-in is a change")
		}
	}
}

// TestSameSlimNode: every field slimNode keeps is compared, so that a
// change of any is a change; the resourceVersion and last-seen are not.
func TestSameSlimNode(t *testing.T) {
	base, _ := slimNode(fullNode())
	covered := base.DeepCopy()
	covered.Name, covered.UID, covered.Generation, covered.ResourceVersion = "", "", 0, ""
	covered.CreationTimestamp, covered.DeletionTimestamp = metav1.Time{}, nil
	covered.Labels, covered.Annotations = nil, nil
	covered.Spec.PodCIDR, covered.Spec.PodCIDRs, covered.Status.Addresses = "", nil, nil
	if !equality.Semantic.DeepEqual(covered, &corev1.Node{}) {
		t.Fatalf("slimNode keeps a field sameSlimNode does not compare: %+v", covered)
	}
	now := metav1.Now()
	for name, change := range map[string]func(*corev1.Node){
		"name":               func(n *corev1.Node) { n.Name += "x" },
		"uid":                func(n *corev1.Node) { n.UID += "x" },
		"generation":         func(n *corev1.Node) { n.Generation++ },
		"creation":           func(n *corev1.Node) { n.CreationTimestamp = metav1.NewTime(time.Unix(1, 0)) },
		"deletion":           func(n *corev1.Node) { n.DeletionTimestamp = &now },
		"a label":            func(n *corev1.Node) { n.Labels["x"] = "y" },
		"a Kilo annotation":  func(n *corev1.Node) { n.Annotations[kilov1alpha1.AnnotationEndpoint] = "203.0.113.9:51820" },
		"an annotation gone": func(n *corev1.Node) { delete(n.Annotations, kilov1alpha1.AnnotationKey) },
		"podCIDR":            func(n *corev1.Node) { n.Spec.PodCIDR = "10.9.9.0/24" },
		"podCIDRs":           func(n *corev1.Node) { n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, "fd00::/64") },
		"an address":         func(n *corev1.Node) { n.Status.Addresses[0].Address = "192.0.2.99" },
	} {
		n := base.DeepCopy()
		change(n)
		if sameSlimNode(base, n) {
			t.Errorf("a change of %s is not seen", name)
		}
	}
	n := base.DeepCopy()
	n.ResourceVersion = "99"
	n.Annotations[kilov1alpha1.AnnotationLastSeen] = "1"
	if !sameSlimNode(base, n) {
		t.Error("a new resourceVersion and last-seen are seen as a change")
	}
}
