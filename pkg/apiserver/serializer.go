package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// newAPIGroupInfo is the mesh group's APIGroupInfo, storage aside: the
// generic defaults with a serializer offering only what it can encode.
func newAPIGroupInfo() genericapiserver.APIGroupInfo {
	group := genericapiserver.NewDefaultAPIGroupInfo(meshv1alpha1.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	group.NegotiatedSerializer = withoutProtobuf{group.NegotiatedSerializer}
	return group
}

// withoutProtobuf is the mesh group's serializer minus protobuf. The mesh
// types have no generated protobuf marshalling, so the group must not offer
// a media type it cannot encode: a client that accepts protobuf and JSON
// (the namespace controller, the garbage collector, any client-go built
// client) then negotiates JSON, as it does with a CustomResource, instead of
// receiving a 500. Objects of meta.k8s.io asked for with as=Table or
// as=PartialObjectMetadata(List) are negotiated against this same list and
// come back in JSON too; the server-wide serializer (discovery at the root,
// errors of the filters) keeps protobuf, whose types all have it.
type withoutProtobuf struct {
	runtime.NegotiatedSerializer
}

var _ runtime.NegotiatedSerializer = withoutProtobuf{}

// SupportedMediaTypes lists the wrapped serializer's media types except
// protobuf.
func (s withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	all := s.NegotiatedSerializer.SupportedMediaTypes()
	kept := make([]runtime.SerializerInfo, 0, len(all))
	for _, info := range all {
		if info.MediaType == runtime.ContentTypeProtobuf {
			continue
		}
		kept = append(kept, info)
	}
	return kept
}
