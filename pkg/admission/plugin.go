// Package admission holds the ClusterMesh rules that need more than the
// object itself: the requester's right to put Peers on the local cluster,
// or a ClusterMeshGrant, recorded on the mesh; the requester's right to
// read the Secrets a mesh borrows; the member API servers the server may
// dial for the mesh's namespace; the networks an administrator allows;
// networks claimed by other tenants' meshes on shared clusters; and that a
// cluster belongs to at most one mesh with multiClusterServices Enabled.
package admission

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// PluginName is the name of the plugin in the admission chain.
const PluginName = "ClusterMeshPolicy"

// Plugin enforces the cross-object rules on create and update of a ClusterMesh.
type Plugin struct {
	*admission.Handler
	allowed     []netip.Prefix
	authorizer  authorizer.Authorizer
	kubeconfigs *kubeconfigs
	resolver    Resolver

	mu      sync.RWMutex
	meshes  cache.Indexer
	members Members
	policy  memberaccess.ServerPolicy
	grants  Grants
}

var (
	_ admission.MutationInterface                     = &Plugin{}
	_ admission.ValidationInterface                   = &Plugin{}
	_ genericadmissioninit.WantsAuthorizer            = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeClientSet = &Plugin{}
)

// New returns the plugin; allowed limits the networks any mesh may claim
// (empty: no limit).
func New(allowed []netip.Prefix) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), allowed: allowed}
}

// Register adds the plugin to a chain's plugins.
func (p *Plugin) Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(_ io.Reader) (admission.Interface, error) { return p, nil })
}

// SetAuthorizer receives the delegated authorizer (SubjectAccessReviews).
func (p *Plugin) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// SetExternalKubeClientSet receives the client of the local cluster, where
// kubeconfig Secrets live; give it a limiter of its own (SecretClientQPS).
func (p *Plugin) SetExternalKubeClientSet(c kubernetes.Interface) {
	p.kubeconfigs = &kubeconfigs{client: c, reads: newSecretReads()}
}

// SetMeshes gives the plugin every stored mesh, the member-cluster caches
// that verified their clusters, and the policy of member API servers. They
// are built after the admission chain, so they arrive late; until then no
// request is served.
func (p *Plugin) SetMeshes(meshes cache.Indexer, members Members, policy memberaccess.ServerPolicy) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.meshes, p.members, p.policy = meshes, members, policy
}

// SetResolver replaces the resolver of member API server names (tests).
func (p *Plugin) SetResolver(r Resolver) { p.resolver = r }

// ValidateInitialization fails the server's start when a dependency is missing.
func (p *Plugin) ValidateInitialization() error {
	if p.authorizer == nil {
		return fmt.Errorf("%s needs an authorizer", PluginName)
	}
	if p.kubeconfigs == nil {
		return fmt.Errorf("%s needs a client of the local cluster", PluginName)
	}
	return nil
}

// Validate applies the rules to meshes only; the status subresource is the
// server's own and never borrows credentials.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	mesh, old, err := meshWrite(a)
	if mesh == nil || err != nil {
		return err
	}
	if old != nil && apiequality.Semantic.DeepEqual(old.Spec, mesh.Spec) {
		return nil // metadata-only writes borrow nothing new
	}
	if errs := p.checkSecrets(ctx, a, mesh); len(errs) > 0 {
		return admission.NewForbidden(a, errs.ToAggregate())
	}
	p.mu.RLock()
	meshes, members, policy := p.meshes, p.members, p.policy
	p.mu.RUnlock()
	if meshes == nil || members == nil || policy == nil || !memberaccess.PolicySynced(policy) {
		return apierrors.NewInternalError(fmt.Errorf("the mesh cache or the member server policy is not ready yet"))
	}
	servers, missing, err := p.kubeconfigs.servers(ctx, mesh, members)
	if err != nil {
		return err
	}
	errs := p.checkServers(ctx, mesh, servers, policy)
	errs = append(errs, checkAllowed(mesh, p.allowed)...)
	outside, err := p.checkGrant(mesh)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	errs = append(errs, outside...)
	ours := refs(mesh, servers, members)
	errs = append(errs, checkDuplicates(mesh, ours)...)
	errs = append(errs, explainMissing(checkOtherMeshes(mesh, old, ours, meshes, members), missing)...)
	errs = append(errs, checkServicesClusters(mesh, old, ours, meshes, members)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(meshv1alpha1.SchemeGroupVersion.WithKind("ClusterMesh").GroupKind(), mesh.Name, errs)
	}
	return nil
}

// meshWrite is the mesh a request writes, and on update the stored one; nil
// for anything else (the status subresource is the server's own).
func meshWrite(a admission.Attributes) (mesh, old *meshv1alpha1.ClusterMesh, err error) {
	if a.GetResource().GroupResource() != meshv1alpha1.Resource("clustermeshes") || a.GetSubresource() != "" {
		return nil, nil, nil
	}
	mesh, ok := a.GetObject().(*meshv1alpha1.ClusterMesh)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("expected a ClusterMesh, got %T", a.GetObject()))
	}
	old, _ = a.GetOldObject().(*meshv1alpha1.ClusterMesh)
	return mesh, old, nil
}

// checkSecrets makes sure nobody borrows credentials they cannot read.
func (p *Plugin) checkSecrets(ctx context.Context, a admission.Attributes, mesh *meshv1alpha1.ClusterMesh) field.ErrorList {
	var errs field.ErrorList
	for i, c := range mesh.Spec.Clusters {
		if c.KubeconfigSecretRef == nil {
			continue
		}
		decision, reason, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
			User:            a.GetUserInfo(),
			Verb:            "get",
			Namespace:       a.GetNamespace(),
			APIVersion:      "v1",
			Resource:        "secrets",
			Name:            c.KubeconfigSecretRef.Name,
			ResourceRequest: true,
		})
		if decision == authorizer.DecisionAllow {
			continue
		}
		msg := fmt.Sprintf("you may not get Secret %q in namespace %q, so the mesh may not use it", c.KubeconfigSecretRef.Name, a.GetNamespace())
		if err != nil {
			msg += fmt.Sprintf(" (authorization failed: %v)", err)
		} else if reason != "" {
			msg += fmt.Sprintf(" (%s)", reason)
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec", "clusters").Index(i).Child("kubeconfigSecretRef", "name"), msg))
	}
	return errs
}
