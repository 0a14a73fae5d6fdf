package admission

import (
	"context"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
)

// Grants is what admission uses of the ClusterMeshGrants (grants.Index).
type Grants interface {
	Coverage(namespace string) (grants.Coverage, error)
}

var _ Grants = (*grants.Index)(nil)

// peerVerbs are what a user must be allowed on peers.kilo.squat.ai of the
// local cluster for a mesh to gain nothing from us there.
var peerVerbs = []string{"create", "update", "delete"}

// SetGrants gives the plugin the grants. Like the meshes, they are read by
// an informer built after the admission chain.
func (p *Plugin) SetGrants(g Grants) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.grants = g
}

// Admit decides, for a mesh with a local cluster, on what basis it may
// reach into that cluster, and records it on the mesh
// (meshv1alpha1.AnnotationHostAccess): the reconciler acts long after the
// requester is gone. It runs on create and on every spec change, as
// Kubernetes checks other objects; a metadata-only write keeps the stored
// record. Whatever a client sent in the annotation is overwritten.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	mesh, old, err := meshWrite(a)
	if mesh == nil || err != nil {
		return err
	}
	if old != nil && apiequality.Semantic.DeepEqual(old.Spec, mesh.Spec) {
		record(mesh, old.Annotations[meshv1alpha1.AnnotationHostAccess])
		setAnnotation(mesh, meshv1alpha1.AnnotationServicesAuthor, old.Annotations[meshv1alpha1.AnnotationServicesAuthor])
		return nil
	}
	if err := recordServicesAuthor(mesh, a); err != nil {
		return apierrors.NewInternalError(err)
	}
	local := localEntry(mesh)
	if local < 0 {
		record(mesh, "") // asks nothing of the host
		return nil
	}
	missing := p.missingPeerRights(ctx, a)
	if len(missing) == 0 {
		record(mesh, meshv1alpha1.HostAccessPeerRights)
		return nil
	}
	cov, err := p.coverage(a.GetNamespace())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if !cov.Covered() {
		return admission.NewForbidden(a, fmt.Errorf("%s marks the cluster this server runs in; putting Peers there needs the right to %s "+
			"peers.kilo.squat.ai on it (you may not %s) or a ClusterMeshGrant covering namespace %q (none does): "+
			"ask a cluster administrator for a ClusterMeshGrant",
			field.NewPath("spec", "clusters").Index(local).Child("local"), strings.Join(peerVerbs, ", "), strings.Join(missing, ", "), a.GetNamespace()))
	}
	record(mesh, meshv1alpha1.HostAccessGrant)
	return nil
}

// checkGrant refuses, for a mesh admitted on a grant, every network the
// grants covering its namespace do not allow, whatever its prefix length.
func (p *Plugin) checkGrant(mesh *meshv1alpha1.ClusterMesh) (field.ErrorList, error) {
	if mesh.Annotations[meshv1alpha1.AnnotationHostAccess] != meshv1alpha1.HostAccessGrant {
		return nil, nil
	}
	cov, err := p.coverage(mesh.Namespace)
	if err != nil {
		return nil, err
	}
	return grants.OutsideGrant(mesh, &cov), nil
}

func (p *Plugin) coverage(namespace string) (grants.Coverage, error) {
	p.mu.RLock()
	g := p.grants
	p.mu.RUnlock()
	if g == nil {
		return grants.Coverage{}, grants.ErrNotSynced
	}
	return g.Coverage(namespace)
}

// missingPeerRights lists the verbs on peers.kilo.squat.ai of the local
// cluster the requester is not allowed, asked through the delegated
// authorizer (SubjectAccessReviews); a failed review counts as a refusal.
func (p *Plugin) missingPeerRights(ctx context.Context, a admission.Attributes) []string {
	var missing []string
	for _, verb := range peerVerbs {
		decision, _, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
			User:            a.GetUserInfo(),
			Verb:            verb,
			APIGroup:        kilov1alpha1.GroupName,
			APIVersion:      kilov1alpha1.SchemeGroupVersion.Version,
			Resource:        kilov1alpha1.PeerResource.Resource,
			ResourceRequest: true,
		})
		if decision != authorizer.DecisionAllow || err != nil {
			missing = append(missing, verb)
		}
	}
	return missing
}

// record sets the host-access annotation to value, or removes it.
func record(mesh *meshv1alpha1.ClusterMesh, value string) {
	setAnnotation(mesh, meshv1alpha1.AnnotationHostAccess, value)
}

// recordServicesAuthor records the requester as the author of a mesh that
// exports and imports services on the host; any other mesh has no record.
func recordServicesAuthor(mesh *meshv1alpha1.ClusterMesh, a admission.Attributes) error {
	if localEntry(mesh) < 0 || mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled || a.GetUserInfo() == nil {
		setAnnotation(mesh, meshv1alpha1.AnnotationServicesAuthor, "")
		return nil
	}
	value, err := grants.EncodeAuthor(a.GetUserInfo())
	if err != nil {
		return err
	}
	setAnnotation(mesh, meshv1alpha1.AnnotationServicesAuthor, value)
	return nil
}

// setAnnotation sets an annotation admission owns to value, or removes it.
func setAnnotation(mesh *meshv1alpha1.ClusterMesh, key, value string) {
	if value == "" {
		delete(mesh.Annotations, key)
		return
	}
	if mesh.Annotations == nil {
		mesh.Annotations = map[string]string{}
	}
	mesh.Annotations[key] = value
}

func localEntry(mesh *meshv1alpha1.ClusterMesh) int {
	for i, c := range mesh.Spec.Clusters {
		if c.Local {
			return i
		}
	}
	return -1
}
