package apiserver

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestGroupSerializerEncodesWhatItOffers: every media type the mesh group
// offers encodes every kind the group answers with, so that negotiation
// never picks a media type that then fails with a 500.
func TestGroupSerializerEncodesWhatItOffers(t *testing.T) {
	group := newAPIGroupInfo()
	offered := group.NegotiatedSerializer.SupportedMediaTypes()
	var types []string
	for _, info := range offered {
		types = append(types, info.MediaType)
	}
	if len(offered) == 0 {
		t.Fatal("the group offers no media type")
	}
	for _, info := range offered {
		if info.MediaType == runtime.ContentTypeProtobuf {
			t.Errorf("the group offers protobuf, which its types do not implement (offered: %v)", types)
		}
	}
	objects := []runtime.Object{
		&meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}},
		&meshv1alpha1.ClusterMeshList{Items: []meshv1alpha1.ClusterMesh{{ObjectMeta: metav1.ObjectMeta{Name: "m"}}}},
		&meshv1alpha1.ClusterMeshPlan{},
		&meshv1alpha1.ClusterMeshPeers{},
		&meshv1alpha1.ClusterMeshGrant{ObjectMeta: metav1.ObjectMeta{Name: "g"}},
		&meshv1alpha1.ClusterMeshGrantList{},
		&metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound},
	}
	for _, info := range offered {
		for _, obj := range objects {
			t.Run(info.MediaType+" "+typeName(obj), func(t *testing.T) {
				enc := group.NegotiatedSerializer.EncoderForVersion(info.Serializer, meshv1alpha1.SchemeGroupVersion)
				var buf bytes.Buffer
				if err := enc.Encode(obj.DeepCopyObject(), &buf); err != nil {
					t.Fatalf("encoding: %v", err)
				}
				if buf.Len() == 0 {
					t.Fatal("encoded nothing")
				}
			})
		}
	}
}

func typeName(obj runtime.Object) string {
	kinds, _, err := Scheme.ObjectKinds(obj)
	if err != nil || len(kinds) == 0 {
		return "unknown"
	}
	return kinds[0].Kind
}
