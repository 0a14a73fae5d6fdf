// Package v1alpha1 holds Kilo's own kilo.squat.ai/v1alpha1 Peer type, written
// here wire-compatible with Kilo because Kilo's module is not available to us.
// The CRD in artifacts/crds is generated from these types.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=ai.squat.kilo.v1alpha1
// +groupName=kilo.squat.ai
package v1alpha1
