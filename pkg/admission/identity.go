package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// Members is what admission reads of the member-cluster caches (the
// wiring in pkg/apiserver passes the clusters.Manager): which physical
// cluster each stored mesh's entries reach, as verified with that mesh's
// own credentials. Nothing is read from a member cluster or a Secret of
// another mesh at admission.
type Members interface {
	// Identities is the verified identity of each cluster of a stored
	// mesh, by name; "" where unknown.
	Identities(mesh *meshv1alpha1.ClusterMesh) map[string]string
	// ServerIdentities are the verified identities of the connections
	// held to a server URL (a memberaccess.ServerIdentity).
	ServerIdentities(server string) []string
	// LocalIdentity is the local cluster's, "" while unknown.
	LocalIdentity() string
	Cached
}

// entryRef is what admission knows of one cluster entry of the mesh being
// written, read from its own Secrets (the requester may read them).
type entryRef struct {
	// server is the kubeconfig's server URL ("" for the local cluster, or
	// when the Secret or its kubeconfig cannot be read yet).
	server string
	// candidates are the identities the entry may have: those verified for
	// its server by connections that exist. A new mesh is not verified
	// before it is stored (that would dial for a mesh admission may
	// refuse); the plan checks it again once it is.
	candidates []string
}

// kubeconfigs reads the kubeconfig server of every remote entry of the
// mesh from the mesh's own namespace: from the member caches' Secret
// watches where a stored mesh references the Secret, else from the local
// cluster, within the bounds of reads (secretReads). A missing Secret or
// key, or a kubeconfig without a usable server, leaves the entry unknown
// (the member caches report it once the mesh is stored).
type kubeconfigs struct {
	client kubernetes.Interface
	reads  *secretReads
}

// Cached reads Secrets from the member caches' Secret watches.
type Cached interface {
	CachedKubeconfig(secret types.NamespacedName, key string) (data []byte, known bool)
}

// servers also returns, by entry index, the entries whose Secret or key
// does not exist, found by the same reads.
func (k *kubeconfigs) servers(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, cached Cached) ([]string, map[int]*field.Error, error) {
	out := make([]string, len(mesh.Spec.Clusters))
	missing := map[int]*field.Error{}
	data := make([][]byte, len(mesh.Spec.Clusters))
	keys := make([]string, len(mesh.Spec.Clusters))
	uncached := map[string][]int{} // Secret name -> entries
	for i, c := range mesh.Spec.Clusters {
		ref := c.KubeconfigSecretRef
		if c.Local || ref == nil {
			continue
		}
		keys[i] = ref.Key
		if keys[i] == "" {
			keys[i] = meshv1alpha1.DefaultKubeconfigKey
		}
		if d, known := cached.CachedKubeconfig(types.NamespacedName{Namespace: mesh.Namespace, Name: ref.Name}, keys[i]); known {
			if data[i] = d; d == nil {
				missing[i] = missingKey(mesh, i, keys[i])
			}
			continue
		}
		uncached[ref.Name] = append(uncached[ref.Name], i)
	}
	if len(uncached) > 0 {
		if err := k.reads.admit(mesh.Namespace, len(uncached)); err != nil {
			return nil, nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(uncached)) {
		secret, err := k.reads.get(ctx, k.client, mesh.Namespace, name)
		if apierrors.IsNotFound(err) {
			for _, i := range uncached[name] {
				missing[i] = missingSecret(mesh, i)
			}
			continue
		}
		if apierrors.IsTooManyRequests(err) {
			return nil, nil, err
		}
		if err != nil {
			return nil, nil, apierrors.NewInternalError(fmt.Errorf("reading Secret %s/%s: %w", mesh.Namespace, name, err))
		}
		for _, i := range uncached[name] {
			if data[i] = secret.Data[keys[i]]; data[i] == nil {
				missing[i] = missingKey(mesh, i, keys[i])
			}
		}
	}
	for i, d := range data {
		if server, err := memberaccess.ServerIdentity(d); d != nil && err == nil {
			out[i] = server
		}
	}
	return out, missing, nil
}

// refs pairs each entry of the mesh being written with its candidates.
func refs(mesh *meshv1alpha1.ClusterMesh, servers []string, members Members) []entryRef {
	out := make([]entryRef, len(mesh.Spec.Clusters))
	for i, c := range mesh.Spec.Clusters {
		switch {
		case c.Local:
			if id := members.LocalIdentity(); id != "" {
				out[i].candidates = []string{id}
			}
		case servers[i] != "":
			out[i] = entryRef{server: servers[i], candidates: members.ServerIdentities(servers[i])}
		}
	}
	return out
}

func (r entryRef) is(identity string) bool {
	return identity != "" && slices.Contains(r.candidates, identity)
}
