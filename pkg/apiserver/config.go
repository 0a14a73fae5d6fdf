// Package apiserver wires the ClusterMesh storage and views into a generic
// Kubernetes API server.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	meshadmission "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/admission"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plancache"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
)

// The member caches are what admission reads of member clusters.
var _ meshadmission.Members = (*clusters.Manager)(nil)

// meshCacheCheckName names the /readyz check of the ClusterMesh cache.
const meshCacheCheckName = "clustermesh-cache"

// Config is everything the server needs, explicit so tests can build one.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

// ExtraConfig holds the server's own settings beyond the generic ones.
type ExtraConfig struct {
	// Admission is the mesh admission plugin; it learns about stored meshes in New.
	Admission *meshadmission.Plugin
	// Local is the client configuration of the cluster this server runs in
	// (--kubeconfig, or in-cluster).
	Local *restclient.Config
	// AllowInsecureSkipTLSVerify lets tenant kubeconfigs skip TLS verification.
	AllowInsecureSkipTLSVerify bool
	// MemberQPS and MemberBurst bound the requests to each member cluster.
	MemberQPS   float32
	MemberBurst int
	// MemberServerCIDRs are where member API servers may be
	// (--member-server-cidrs), besides what grants add per namespace.
	MemberServerCIDRs []netip.Prefix
	// MaxMemberNodes bounds the Nodes cached of one member cluster.
	MaxMemberNodes int
	// MaxMemberPeers and MaxMemberCacheBytes bound the Peers cached of one
	// tenant's member cluster, and what all its caches weigh.
	MaxMemberPeers      int
	MaxMemberCacheBytes int64
	// MaxServiceExports and MaxEndpointsPerService bound the services
	// caches of one member cluster.
	MaxServiceExports, MaxEndpointsPerService int
	// MaxNamespaceCacheBytes and MaxMemberCacheTotalBytes bound what is
	// cached of one namespace's member clusters and of all tenants'.
	MaxNamespaceCacheBytes   int64
	MaxMemberCacheTotalBytes int64
	// Reconciler configures the controller that writes Peers.
	Reconciler *reconciler.Options
	// HostAccessGracePeriod is how long meshes stored before grants
	// existed, and covered by none, keep their access to the local cluster.
	HostAccessGracePeriod time.Duration
	// Installation names this installation on the Peers it writes
	// (installationID); empty: they carry no such name, and no Peer is
	// removed for want of its mesh but those of meshes seen deleted.
	Installation string
	// Version is the server's version (pkg/version), sent in
	// version.Header for `kubectl mesh version`.
	Version string
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
}

// CompletedConfig can only be made by Complete, so New always sees defaults filled in.
type CompletedConfig struct {
	*completedConfig
}

// Server is the running mesh API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// Complete fills in the defaults of the generic config.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		GenericConfig: c.GenericConfig.Complete(),
		ExtraConfig:   &c.ExtraConfig,
	}}
}

// New builds the server: mesh storage and views, the caches of member
// clusters every replica keeps for the views, and the reconciler.
func (c CompletedConfig) New() (*Server, error) {
	chain := c.GenericConfig.BuildHandlerChainFunc
	c.GenericConfig.BuildHandlerChainFunc = func(h http.Handler, gc *genericapiserver.Config) http.Handler {
		return withStatusPeers(chain(withVersionHeader(c.ExtraConfig.Version, h), gc))
	}
	generic, err := c.GenericConfig.New("kilo-mesh-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("building generic API server: %w", err)
	}
	// Requests drain, and watches get their grace, before this bound is
	// awaited: it cuts only connections that outlive both.
	generic.ShutdownTimeout = connDrainPeriod
	bg := newBackground(generic)
	meshes, status, err := clustermesh.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter)
	if err != nil {
		return nil, err
	}
	local := c.ExtraConfig.Local
	if local == nil {
		return nil, fmt.Errorf("no client of the local cluster: set --kubeconfig or run in a pod")
	}
	grantWiring, err := newGrants(c.GenericConfig.RESTOptionsGetter, c.GenericConfig.SharedInformerFactory)
	if err != nil {
		return nil, err
	}
	policy := memberServers{flag: c.ExtraConfig.MemberServerCIDRs, grants: grantWiring.index}
	members, err := clusters.NewManager(clusters.Config{
		Local:                      local,
		AllowInsecureSkipTLSVerify: c.ExtraConfig.AllowInsecureSkipTLSVerify,
		QPS:                        c.ExtraConfig.MemberQPS,
		Burst:                      c.ExtraConfig.MemberBurst,
		ServerPolicy:               policy,
		MaxNodes:                   c.ExtraConfig.MaxMemberNodes,
		MaxPeers:                   c.ExtraConfig.MaxMemberPeers,
		MaxServiceExports:          c.ExtraConfig.MaxServiceExports,
		MaxEndpointsPerService:     c.ExtraConfig.MaxEndpointsPerService,
		MaxCacheBytes:              c.ExtraConfig.MaxMemberCacheBytes,
		MaxNamespaceCacheBytes:     c.ExtraConfig.MaxNamespaceCacheBytes,
		MaxTotalCacheBytes:         c.ExtraConfig.MaxMemberCacheTotalBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("building the member-cluster caches: %w", err)
	}
	plans, err := plancache.New(plancache.Config{
		Members:      members,
		Grants:       grantWiring.index,
		GracePeriod:  c.ExtraConfig.HostAccessGracePeriod,
		Installation: c.ExtraConfig.Installation,
		ServerPolicy: policy,
		Authorizer:   c.GenericConfig.Authorization.Authorizer,
	})
	if err != nil {
		return nil, err
	}
	informer := newMeshInformer(meshes)
	if err := members.FollowMeshes(informer); err != nil {
		return nil, err
	}
	if err := plans.FollowMeshes(informer); err != nil {
		return nil, err
	}
	c.ExtraConfig.Admission.SetMeshes(informer.GetIndexer(), members, policy)
	c.ExtraConfig.Admission.SetGrants(grantWiring.index)

	group := newAPIGroupInfo()
	group.VersionedResourcesStorageMap[meshv1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"clustermeshes":          meshes,
		"clustermeshes/status":   status,
		"clustermeshes/plan":     clustermesh.NewPlanREST(meshes, plans),
		"clustermeshes/peers":    clustermesh.NewPeersREST(meshes, plans),
		"clustermeshes/services": clustermesh.NewServicesREST(meshes, servicesPlanner{cache: plans}),
		"clustermeshgrants":      grantWiring.rest,
	}
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("installing %s: %w", meshv1alpha1.GroupName, err)
	}
	if err := generic.AddReadyzChecks(meshCacheCheck(informer)); err != nil {
		return nil, fmt.Errorf("adding readyz check: %w", err)
	}
	if err := grantWiring.install(generic, bg); err != nil {
		return nil, err
	}
	if err := followMemberServers(generic, bg, grantWiring.index, members); err != nil {
		return nil, err
	}
	if err := bg.hook(generic, "kilo-mesh-caches", func(ctx context.Context) { informer.RunWithContext(ctx) }, members.Run); err != nil {
		return nil, err
	}
	if err := installReconciler(generic, bg, c.ExtraConfig.Reconciler, local, c.ExtraConfig.Installation, informer, members, plans, plans); err != nil {
		return nil, err
	}
	return &Server{GenericAPIServer: generic}, nil
}

// meshCacheCheck is the one /readyz check of the caches: the ClusterMesh
// informer, which the views, admission and the reconciler all read, has
// synced. Member clusters have no say: they belong to tenants, and one that
// hangs or lies must not take the server out of its Service.
func meshCacheCheck(informer cache.SharedInformer) healthz.HealthChecker {
	return healthz.NamedCheck(meshCacheCheckName, func(*http.Request) error {
		if !informer.HasSynced() {
			return errors.New("the ClusterMesh cache has not synced")
		}
		return nil
	})
}
