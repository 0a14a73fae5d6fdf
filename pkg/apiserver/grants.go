package apiserver

import (
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermeshgrant"
)

// grantCacheCheckName names the /readyz check of the grants: access to the
// local cluster is not decided, in admission or in plans, before they are
// known. It depends on the server's own storage and the local cluster only.
const grantCacheCheckName = "clustermeshgrant-cache"

// grantWiring is the ClusterMeshGrant storage and what reads it.
type grantWiring struct {
	rest     *clustermeshgrant.REST
	informer cache.SharedIndexInformer
	index    *grants.Index
}

// newGrants builds the grant storage, an informer over it, and the index
// that evaluates grants against the local cluster's namespaces (their
// labels, for namespaceSelector), from the generic server's informers.
func newGrants(optsGetter generic.RESTOptionsGetter, factory informers.SharedInformerFactory) (*grantWiring, error) {
	if factory == nil {
		return nil, errors.New("no informers of the local cluster: namespace selectors of ClusterMeshGrants cannot be evaluated")
	}
	store, err := clustermeshgrant.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	informer := newStorageInformer(store, &meshv1alpha1.ClusterMeshGrant{}, cache.Indexers{})
	index, err := grants.NewIndex(informer, factory.Core().V1().Namespaces().Informer())
	if err != nil {
		return nil, err
	}
	return &grantWiring{rest: store, informer: informer, index: index}, nil
}

// install starts the grant informer with the server (the generic server
// starts the namespace informer) and adds its readiness check.
func (g *grantWiring) install(generic *genericapiserver.GenericAPIServer, bg *background) error {
	if err := generic.AddReadyzChecks(healthz.NamedCheck(grantCacheCheckName, func(*http.Request) error {
		if !g.index.HasSynced() {
			return grants.ErrNotSynced
		}
		return nil
	})); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}
	return bg.hook(generic, "kilo-mesh-grants", g.informer.RunWithContext)
}
