// Package v1alpha1 holds the mesh.kilo.squat.ai/v1alpha1 API: ClusterMesh and
// the computed views served beside it. It is the only version, so the same Go
// types are also registered as the internal version and need no conversion.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=ai.squat.kilo.mesh.v1alpha1
// +groupName=mesh.kilo.squat.ai
package v1alpha1
