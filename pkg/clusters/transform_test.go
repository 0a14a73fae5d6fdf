package clusters

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
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

func TestTransformNode(t *testing.T) {
	in := fullNode()
	got, err := transformNode(in)
	if err != nil {
		t.Fatal(err)
	}
	n := got.(*corev1.Node)
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "n1", UID: "uid-1", ResourceVersion: "42", CreationTimestamp: in.CreationTimestamp,
			Labels:      in.Labels,
			Annotations: map[string]string{"kilo.squat.ai/key": "abc=", "kilo.squat.ai/location": "eu"},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:1::/64"}},
		Status: corev1.NodeStatus{
			Addresses: in.Status.Addresses,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: in.Status.Conditions[1].LastTransitionTime},
			},
		},
	}
	if !equality.Semantic.DeepEqual(n, want) {
		t.Errorf("transformed node:\n got %+v\nwant %+v", n, want)
	}
	if _, ok := in.Annotations[lastAppliedAnnotation]; !ok {
		t.Error("the input's annotations were modified")
	}
	again, _ := transformNode(n)
	if !equality.Semantic.DeepEqual(again, n) {
		t.Error("transform is not idempotent")
	}
	tombstone := passThroughObject()
	if out, _ := transformNode(tombstone); out != tombstone {
		t.Error("non-Node objects must pass through")
	}
}

func passThroughObject() any { return struct{ Key string }{Key: "n1"} }

func TestUnchanged(t *testing.T) {
	base, _ := transformNode(fullNode())
	heartbeat := fullNode()
	heartbeat.ResourceVersion = "43"
	heartbeat.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(time.Unix(1700000100, 0))
	heartbeat.Status.Images = nil
	hb, _ := transformNode(heartbeat)
	now := time.Now()
	if !unchanged(base, hb, now) {
		t.Error("a heartbeat-only update counts as a change")
	}
	annotated := fullNode()
	annotated.ResourceVersion = "44"
	annotated.Annotations["kilo.squat.ai/endpoint"] = "203.0.113.99:51820"
	an, _ := transformNode(annotated)
	if unchanged(base, an, now) {
		t.Error("an annotation change is not seen")
	}
	notReady := fullNode()
	notReady.Status.Conditions[1].Status = corev1.ConditionFalse
	nr, _ := transformNode(notReady)
	if unchanged(base, nr, now) {
		t.Error("a readiness change is not seen")
	}

	// kg's check-ins: routine on a live node, news on a silent one.
	checkIn := func(lastSeen time.Time) *corev1.Node {
		n := base.(*corev1.Node).DeepCopy()
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

func TestTransformPeer(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kilo.squat.ai/v1alpha1",
		"kind":       "Peer",
		"metadata": map[string]any{
			"name": "p1", "uid": "u1", "resourceVersion": "7",
			"labels":        map[string]any{"mesh.kilo.squat.ai/mesh-uid": "m"},
			"annotations":   map[string]any{lastAppliedAnnotation: "{}"},
			"managedFields": []any{map[string]any{"manager": "x"}},
		},
		"spec": map[string]any{
			"allowedIPs":          []any{"10.1.0.0/24", "10.4.0.1/32"},
			"publicKey":           "key=",
			"persistentKeepalive": int64(25),
			"endpoint":            map[string]any{"dnsOrIP": map[string]any{"ip": "192.0.2.1"}, "port": int64(51820)},
		},
	}}
	got, err := transformPeer(u)
	if err != nil {
		t.Fatal(err)
	}
	want := &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: "p1", UID: "u1", ResourceVersion: "7", Labels: map[string]string{"mesh.kilo.squat.ai/mesh-uid": "m"}},
		Spec: kilov1alpha1.PeerSpec{
			AllowedIPs: []string{"10.1.0.0/24", "10.4.0.1/32"}, PublicKey: "key=", PersistentKeepalive: 25,
			Endpoint: &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820},
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	again, _ := transformPeer(got)
	if again != got {
		t.Error("a transformed Peer must pass through")
	}

	bad := u.DeepCopy()
	bad.Object["spec"] = map[string]any{"allowedIPs": "not-a-list", "publicKey": "key="}
	got, err = transformPeer(bad)
	if err != nil {
		t.Fatal(err)
	}
	if p := got.(*kilov1alpha1.Peer); p.Name != "p1" || p.Spec.PublicKey != "" || p.Spec.AllowedIPs != nil {
		t.Errorf("malformed spec: got %+v, want metadata with an empty spec", p)
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
