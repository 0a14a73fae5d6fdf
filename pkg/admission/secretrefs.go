package admission

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// missingSecrets finds the entries whose Secret, or key, does not exist,
// by entry index. A mesh may be stored before its Secrets (the member
// caches report them then); it is read after the requester's right to
// read the Secrets was checked, so it tells nothing they could not learn.
func (k *kubeconfigs) missingSecrets(ctx context.Context, mesh *meshv1alpha1.ClusterMesh) (map[int]*field.Error, error) {
	out := map[int]*field.Error{}
	for i, c := range mesh.Spec.Clusters {
		ref := c.KubeconfigSecretRef
		if c.Local || ref == nil {
			continue
		}
		path := field.NewPath("spec", "clusters").Index(i).Child("kubeconfigSecretRef")
		secret, err := k.client.CoreV1().Secrets(mesh.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out[i] = field.Invalid(path.Child("name"), ref.Name,
				fmt.Sprintf("no Secret %q in namespace %q, so the cluster cannot be told apart from the others: create it first (kubectl mesh join does), or fix the name", ref.Name, mesh.Namespace))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", mesh.Namespace, ref.Name, err)
		}
		key := ref.Key
		if key == "" {
			key = meshv1alpha1.DefaultKubeconfigKey
		}
		if _, ok := secret.Data[key]; !ok {
			out[i] = field.Invalid(path.Child("key"), key, fmt.Sprintf("Secret %q has no key %q, so the cluster cannot be told apart from the others", ref.Name, key))
		}
	}
	return out, nil
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
