package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// missingSecret and missingKey say at its field that an entry's Secret, or
// its key, does not exist. A mesh may be stored before its Secrets (the
// member caches report them then); they are read after the requester's
// right to read the Secrets was checked, so they tell nothing new.
func missingSecret(mesh *meshv1alpha1.ClusterMesh, i int) *field.Error {
	name := mesh.Spec.Clusters[i].KubeconfigSecretRef.Name
	return field.Invalid(secretRefPath(i).Child("name"), name,
		fmt.Sprintf("no Secret %q in namespace %q, so the cluster cannot be told apart from the others: create it first (kubectl mesh join does), or fix the name", name, mesh.Namespace))
}

func missingKey(mesh *meshv1alpha1.ClusterMesh, i int, key string) *field.Error {
	name := mesh.Spec.Clusters[i].KubeconfigSecretRef.Name
	return field.Invalid(secretRefPath(i).Child("key"), key, fmt.Sprintf("Secret %q has no key %q, so the cluster cannot be told apart from the others", name, key))
}

func secretRefPath(i int) *field.Path {
	return field.NewPath("spec", "clusters").Index(i).Child("kubeconfigSecretRef")
}

// explainMissing answers an entry whose Secret or key is missing with that,
// at its field, instead of the overlaps found for it: without the Secret
// the cluster is unknown, and the overlap is a guess (a typo in the name
// must not read as a network conflict).
func explainMissing(errs field.ErrorList, missing map[int]*field.Error) field.ErrorList {
	if len(missing) == 0 {
		return errs
	}
	var out field.ErrorList
	reported := map[int]bool{}
	for _, e := range errs {
		i, ok := entryIndex(e.Field)
		if !ok || missing[i] == nil {
			out = append(out, e)
			continue
		}
		if !reported[i] {
			reported[i] = true
			out = append(out, missing[i])
		}
	}
	return out
}

// entryIndex is i of a field path under spec.clusters[i].
func entryIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "spec.clusters[")
	if !ok {
		return 0, false
	}
	var i int
	if _, err := fmt.Sscanf(rest, "%d]", &i); err != nil {
		return 0, false
	}
	return i, true
}
