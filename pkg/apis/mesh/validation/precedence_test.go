package validation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestPrecedes(t *testing.T) {
	at := func(sec int64, uid types.UID) *meshv1alpha1.ClusterMesh {
		m := &meshv1alpha1.ClusterMesh{ObjectMeta: metav1.ObjectMeta{UID: uid}}
		if sec > 0 {
			m.CreationTimestamp = metav1.NewTime(time.Unix(sec, 0))
		}
		return m
	}
	for _, tc := range []struct {
		name string
		a, b *meshv1alpha1.ClusterMesh
		want bool
	}{
		{"created first", at(10, "b"), at(20, "a"), true},
		{"created later", at(20, "a"), at(10, "b"), false},
		{"same second, lower UID", at(10, "a"), at(10, "b"), true},
		{"same second, higher UID", at(10, "b"), at(10, "a"), false},
		{"stored before one being created", at(10, "z"), at(0, ""), true},
		{"being created, against a stored one", at(0, ""), at(10, "z"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Precedes(tc.a, tc.b); got != tc.want {
				t.Errorf("Precedes = %v, want %v", got, tc.want)
			}
		})
	}
}
