package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is Kilo's API group.
const GroupName = "kilo.squat.ai"

// SchemeGroupVersion is the version of Kilo's API that holds Peers.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// PeerResource is the resource Kilo serves Peers under.
var PeerResource = SchemeGroupVersion.WithResource("peers")

var (
	// SchemeBuilder registers the Kilo types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the Kilo types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Peer{}, &PeerList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
