package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

// localIdentity names the cluster this server runs in; no server URL is
// written like it.
const localIdentity = "local"

// identities tells which physical cluster a mesh entry points at: the local
// one, or the API server its kubeconfig names (clusters.ServerIdentity). Two
// tenants with different credentials for one cluster share that cluster, so
// credentials are not part of the identity.
type identities struct {
	client kubernetes.Interface
}

func newIdentities(c kubernetes.Interface) *identities { return &identities{client: c} }

// of returns one identity per spec.clusters entry; "" when the kubeconfig
// cannot be read yet (a Secret may be created after its mesh).
func (ids *identities) of(ctx context.Context, mesh *meshv1alpha1.ClusterMesh) ([]string, error) {
	out := make([]string, len(mesh.Spec.Clusters))
	for i, c := range mesh.Spec.Clusters {
		if c.Local {
			out[i] = localIdentity
			continue
		}
		if c.KubeconfigSecretRef == nil {
			continue
		}
		id, err := ids.remote(ctx, mesh.Namespace, c.KubeconfigSecretRef)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

func (ids *identities) remote(ctx context.Context, namespace string, ref *meshv1alpha1.SecretKeyReference) (string, error) {
	secret, err := ids.client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Secret %s/%s: %w", namespace, ref.Name, err)
	}
	key := ref.Key
	if key == "" {
		key = meshv1alpha1.DefaultKubeconfigKey
	}
	// A kubeconfig without a usable server names no cluster: the members'
	// caches never connect through it either.
	id, err := clusters.ServerIdentity(secret.Data[key])
	if err != nil {
		return "", nil
	}
	return id, nil
}
