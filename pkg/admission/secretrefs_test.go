package admission

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestSameRef(t *testing.T) {
	stored := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: meshv1alpha1.ClusterMeshSpec{Clusters: []meshv1alpha1.ClusterEntry{
		{Name: "west", KubeconfigSecretRef: &meshv1alpha1.SecretKeyReference{Name: "west-kubeconfig", Key: "kubeconfig"}},
		{Name: "east", Local: true},
	}}}
	tests := []struct {
		name  string
		old   *meshv1alpha1.ClusterMesh
		entry string
		ref   meshv1alpha1.SecretKeyReference
		want  bool
	}{
		{"a new mesh", nil, "west", meshv1alpha1.SecretKeyReference{Name: "west-kubeconfig", Key: "kubeconfig"}, false},
		{"unchanged", stored, "west", meshv1alpha1.SecretKeyReference{Name: "west-kubeconfig", Key: "kubeconfig"}, true},
		{"renamed Secret", stored, "west", meshv1alpha1.SecretKeyReference{Name: "west-kubecnfig", Key: "kubeconfig"}, false},
		{"other key", stored, "west", meshv1alpha1.SecretKeyReference{Name: "west-kubeconfig", Key: "config"}, false},
		{"a new entry", stored, "north", meshv1alpha1.SecretKeyReference{Name: "west-kubeconfig", Key: "kubeconfig"}, false},
		{"a local entry made remote", stored, "east", meshv1alpha1.SecretKeyReference{Name: "east", Key: "kubeconfig"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameRef(tt.old, tt.entry, &tt.ref); got != tt.want {
				t.Errorf("sameRef = %v, want %v", got, tt.want)
			}
		})
	}
}
