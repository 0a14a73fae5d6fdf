package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// missingSecrets refuses entries that the write points at a Secret, or a
// key, that does not exist: a typo in the name must be answered at its
// field, not by the overlap checks that could not tell the cluster apart.
// Only references the write adds or changes count; a Secret deleted after
// its mesh was stored is the member caches' to report. It runs after the
// requester's right to read the Secrets was checked, so it tells nothing
// they could not learn themselves.
func (k *kubeconfigs) missingSecrets(ctx context.Context, mesh, old *meshv1alpha1.ClusterMesh) (field.ErrorList, error) {
	var errs field.ErrorList
	for i, c := range mesh.Spec.Clusters {
		ref := c.KubeconfigSecretRef
		if c.Local || ref == nil || sameRef(old, c.Name, ref) {
			continue
		}
		path := field.NewPath("spec", "clusters").Index(i).Child("kubeconfigSecretRef")
		secret, err := k.client.CoreV1().Secrets(mesh.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			errs = append(errs, field.Invalid(path.Child("name"), ref.Name,
				fmt.Sprintf("no Secret %q in namespace %q: create it first (kubectl mesh join does), or fix the name", ref.Name, mesh.Namespace)))
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
			errs = append(errs, field.Invalid(path.Child("key"), key, fmt.Sprintf("Secret %q has no key %q", ref.Name, key)))
		}
	}
	return errs, nil
}

// sameRef reports whether the stored mesh already has entry name pointing
// at the same Secret and key.
func sameRef(old *meshv1alpha1.ClusterMesh, name string, ref *meshv1alpha1.SecretKeyReference) bool {
	if old == nil {
		return false
	}
	for _, c := range old.Spec.Clusters {
		if c.Name == name {
			return c.KubeconfigSecretRef != nil && *c.KubeconfigSecretRef == *ref
		}
	}
	return false
}
