package admission

import (
	"context"
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
)

// checkAllowed refuses networks outside what the administrator allows.
func checkAllowed(mesh *meshv1alpha1.ClusterMesh, allowed []netip.Prefix) field.ErrorList {
	if len(allowed) == 0 {
		return nil
	}
	var errs field.ErrorList
	for _, n := range meshNetworks(mesh) {
		if !validation.Within(n.Prefix, allowed) {
			errs = append(errs, field.Forbidden(n.Path, fmt.Sprintf("%s is outside the networks this server allows (%s)", n.Prefix, validation.JoinPrefixes(allowed))))
		}
	}
	return errs
}

// checkOtherMeshes refuses networks that overlap those of another mesh, in
// any namespace, when both meshes put Peers on a common cluster: that
// cluster would route one range to two places. A cluster's own networks,
// declared by both meshes, are not a conflict. The message names no other
// tenant's mesh or network.
func (p *Plugin) checkOtherMeshes(ctx context.Context, mesh *meshv1alpha1.ClusterMesh) (field.ErrorList, error) {
	p.mu.RLock()
	meshes := p.meshes
	p.mu.RUnlock()
	if meshes == nil {
		return nil, fmt.Errorf("the mesh cache is not ready yet")
	}
	ours, err := p.identities.of(ctx, mesh)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	reported := map[string]bool{}
	for _, obj := range meshes.List() {
		other, ok := obj.(*meshv1alpha1.ClusterMesh)
		if !ok || other.Namespace == mesh.Namespace && other.Name == mesh.Name {
			continue
		}
		theirs, err := p.identities.of(ctx, other)
		if err != nil {
			return nil, err
		}
		if !shareCluster(ours, theirs) {
			continue
		}
		for i := range mesh.Spec.Clusters {
			for j := range other.Spec.Clusters {
				if ours[i] != "" && ours[i] == theirs[j] {
					continue // the same cluster: its networks are its own in both meshes
				}
				for _, n := range overlapping(&mesh.Spec.Clusters[i], i, &other.Spec.Clusters[j]) {
					if !reported[n.Path.String()] {
						reported[n.Path.String()] = true
						errs = append(errs, field.Invalid(n.Path, n.Prefix.String(),
							"overlaps a network claimed by another ClusterMesh that shares a member cluster with this one"))
					}
				}
			}
		}
	}
	return errs, nil
}

func shareCluster(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x != "" && x == y {
				return true
			}
		}
	}
	return false
}

// overlapping returns the networks of ours (entry i of its mesh) that overlap one of theirs.
func overlapping(ours *meshv1alpha1.ClusterEntry, i int, theirs *meshv1alpha1.ClusterEntry) []validation.Network {
	mine, _ := validation.ClusterNetworks(ours, field.NewPath("spec", "clusters").Index(i))
	other, _ := validation.ClusterNetworks(theirs, field.NewPath("other"))
	var out []validation.Network
	for _, m := range mine {
		for _, o := range other {
			if m.Prefix.Overlaps(o.Prefix) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

func meshNetworks(mesh *meshv1alpha1.ClusterMesh) []validation.Network {
	var out []validation.Network
	for i := range mesh.Spec.Clusters {
		nets, _ := validation.ClusterNetworks(&mesh.Spec.Clusters[i], field.NewPath("spec", "clusters").Index(i))
		out = append(out, nets...)
	}
	return out
}
