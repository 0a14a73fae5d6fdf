// Package strategies holds what the write strategies of the server's stored
// resources share: the answers they all give alike, and the rule that moves
// an object's generation.
package strategies

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Common answers alike for every stored resource of the server: no
// warnings, no create through an update, updates without a resourceVersion
// allowed, and nothing to canonicalize.
type Common struct{}

func (Common) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (Common) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (Common) AllowCreateOnUpdate() bool { return false }

func (Common) AllowUnconditionalUpdate() bool { return true }

func (Common) Canonicalize(runtime.Object) {}

// KeepGeneration gives obj the generation of old, one more when the spec
// changed: clients cannot set it, and only a spec change moves it.
func KeepGeneration(obj, old metav1.Object, spec, oldSpec any) {
	generation := old.GetGeneration()
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		generation++
	}
	obj.SetGeneration(generation)
}
