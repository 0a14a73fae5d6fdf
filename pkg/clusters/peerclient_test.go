package clusters

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

func TestReadWritten(t *testing.T) {
	for _, c := range []struct {
		name, body          string
		rv                  string
		keepalive, endpoint bool
		err                 bool
	}{
		{name: "a Peer", rv: "12",
			body: `{"apiVersion":"kilo.squat.ai/v1alpha1","kind":"Peer","metadata":{"name":"p","resourceVersion":"12","managedFields":[{"manager":"m"}]},"spec":{"allowedIPs":["10.0.0.0/24"],"publicKey":"k"}}`},
		{name: "with a keepalive and an endpoint", rv: "3", keepalive: true, endpoint: true,
			body: `{"apiVersion":"kilo.squat.ai/v1alpha1","kind":"Peer","metadata":{"resourceVersion":"3"},"spec":{"persistentKeepalive":25,"endpoint":{"dnsOrIP":{"ip":"192.0.2.1"},"port":51820}}}`},
		{name: "a null endpoint", rv: "4",
			body: `{"apiVersion":"kilo.squat.ai/v1alpha1","kind":"Peer","metadata":{"resourceVersion":"4"},"spec":{"endpoint":null}}`},
		{name: "field names are case sensitive", rv: "",
			body: `{"apiVersion":"kilo.squat.ai/v1alpha1","kind":"Peer","metadata":{"ResourceVersion":"5"},"spec":{"Endpoint":{}}}`},
		{name: "another kind", err: true, body: `{"apiVersion":"v1","kind":"Status","status":"Success"}`},
		{name: "another group", err: true, body: `{"apiVersion":"example.com/v1alpha1","kind":"Peer","metadata":{"resourceVersion":"1"}}`},
		{name: "not JSON", err: true, body: `<html>`},
		{name: "empty", err: true, body: ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := readWritten([]byte(c.body))
			if (err != nil) != c.err {
				t.Fatalf("error %v, want one: %v", err, c.err)
			}
			if err != nil {
				return
			}
			if w.ResourceVersion != c.rv || w.Keepalive != c.keepalive || w.Endpoint != c.endpoint {
				t.Errorf("read %q, keepalive %v, endpoint %v; want %q, %v, %v", w.ResourceVersion, w.Keepalive, w.Endpoint, c.rv, c.keepalive, c.endpoint)
			}
			live, err := w.Live()
			if err != nil || live.ResourceVersion != c.rv {
				t.Errorf("Live: %v, %v", live, err)
			}
		})
	}
}

// BenchmarkWriteAnswer: the answer to a write of a location's Peer of 100
// nodes, with its managed fields, decoded whole as a write's answer was
// before, and read for what a pass needs.
func BenchmarkWriteAnswer(b *testing.B) {
	peer := &kilov1alpha1.Peer{
		TypeMeta:   metav1.TypeMeta{APIVersion: kilov1alpha1.SchemeGroupVersion.String(), Kind: kilov1alpha1.PeerKind},
		ObjectMeta: metav1.ObjectMeta{Name: "m-c1-location-a", ResourceVersion: "12", Labels: map[string]string{"a": "b"}},
		Spec: kilov1alpha1.PeerSpec{PublicKey: "k", PersistentKeepalive: 25,
			Endpoint: &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820}},
	}
	fields := map[string]any{}
	for i := range 100 {
		ip := fmt.Sprintf("10.1.%d.0/24", i)
		peer.Spec.AllowedIPs = append(peer.Spec.AllowedIPs, ip)
		fields[fmt.Sprintf("v:%q", ip)] = map[string]any{}
	}
	raw, err := json.Marshal(map[string]any{"f:spec": map[string]any{"f:allowedIPs": fields}})
	if err != nil {
		b.Fatal(err)
	}
	peer.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kilo-mesh-apiserver", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}}
	body, err := json.Marshal(peer)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			var out kilov1alpha1.Peer
			if _, _, err := peerCodecs.UniversalDeserializer().Decode(body, nil, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := readWritten(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
