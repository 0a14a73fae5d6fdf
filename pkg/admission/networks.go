package admission

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

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
// cluster would route one range to two places. Only what another mesh has
// verified counts as its claim (a mesh whose credentials do not reach a
// cluster claims nothing there, so nobody can squat a cluster by naming
// it). A cluster's own networks, declared by both meshes, are not a
// conflict. The message names no other tenant's mesh, Secret or network.
//
// The mesh that claimed a network first keeps it: on update (old is the
// stored mesh), a network the entry already declared is checked only
// against meshes that precede this one (validation.Precedes), so a later
// mesh cannot block an earlier one's updates; a network new to the entry
// is checked against every mesh.
func checkOtherMeshes(mesh, old *meshv1alpha1.ClusterMesh, ours []entryRef, meshes cache.Indexer, members Members) field.ErrorList {
	entries := field.NewPath("spec", "clusters")
	var mine [][]validation.Network
	for i := range mesh.Spec.Clusters {
		nets, _ := validation.ClusterNetworks(&mesh.Spec.Clusters[i], entries.Index(i))
		mine = append(mine, nets)
	}
	held := heldNetworks(old)
	var errs field.ErrorList
	reported := map[string]bool{}
	for _, obj := range meshes.List() {
		other, ok := obj.(*meshv1alpha1.ClusterMesh)
		if !ok || other.Namespace == mesh.Namespace && other.Name == mesh.Name {
			continue
		}
		theirs := members.Identities(other)
		if !shareCluster(ours, theirs) {
			continue
		}
		// Their verified networks, with the cluster each belongs to.
		var claims []netip.Prefix
		var owner []string
		for j := range other.Spec.Clusters {
			id := theirs[other.Spec.Clusters[j].Name]
			if id == "" {
				continue
			}
			nets, _ := validation.ClusterNetworks(&other.Spec.Clusters[j], entries.Index(j))
			for _, n := range nets {
				claims, owner = append(claims, n.Prefix), append(owner, id)
			}
		}
		later := !validation.Precedes(other, mesh)
		for i, nets := range mine {
			// The same cluster in both meshes: its networks are its own.
			var against []netip.Prefix
			for k, c := range claims {
				if !ours[i].is(owner[k]) {
					against = append(against, c)
				}
			}
			prefixes := make([]netip.Prefix, len(nets))
			for k, n := range nets {
				prefixes[k] = n.Prefix
			}
			for k, hit := range validation.OverlapsWith(prefixes, against) {
				if later && validation.Within(nets[k].Prefix, held[mesh.Spec.Clusters[i].Name]) {
					continue // claimed before the other mesh existed
				}
				if path := nets[k].Path.String(); hit >= 0 && !reported[path] {
					reported[path] = true
					errs = append(errs, field.Invalid(nets[k].Path, nets[k].Prefix.String(),
						"overlaps a network claimed by another ClusterMesh that shares a member cluster with this one"))
				}
			}
		}
	}
	return errs
}

// heldNetworks are the networks the stored mesh declares, by entry name;
// nil for a mesh being created.
func heldNetworks(old *meshv1alpha1.ClusterMesh) map[string][]netip.Prefix {
	if old == nil {
		return nil
	}
	out := map[string][]netip.Prefix{}
	for i := range old.Spec.Clusters {
		nets, _ := validation.ClusterNetworks(&old.Spec.Clusters[i], field.NewPath("spec"))
		for _, n := range nets {
			out[old.Spec.Clusters[i].Name] = append(out[old.Spec.Clusters[i].Name], n.Prefix)
		}
	}
	return out
}

// shareCluster reports whether a stored mesh has verified a cluster that
// one of our entries may be.
func shareCluster(ours []entryRef, theirs map[string]string) bool {
	for _, r := range ours {
		for _, id := range theirs {
			if r.is(id) {
				return true
			}
		}
	}
	return false
}

func meshNetworks(mesh *meshv1alpha1.ClusterMesh) []validation.Network {
	var out []validation.Network
	for i := range mesh.Spec.Clusters {
		nets, _ := validation.ClusterNetworks(&mesh.Spec.Clusters[i], field.NewPath("spec", "clusters").Index(i))
		out = append(out, nets...)
	}
	return out
}
