package planner

import (
	"slices"
	"strings"
	"time"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Plan is the outcome of Compute.
type Plan struct {
	// View is the typed plan served at clustermeshes/NAME/plan.
	View meshv1alpha1.ClusterMeshPlan
	// DesiredPeers holds, per target cluster, every Peer it must hold,
	// sorted by name: the reconciler server-side-applies exactly these, then
	// deletes the Peers in the target's View.Targets[].Delete.
	//
	// The Peers are read-only. A group's Peer is built once and the same
	// *Peer is listed on every target that gets it as it is (one Peer of a
	// 10 x 1,000-node full plan is on nine targets); Peers that differ per
	// target still share labels and annotations with it; and a Plan may be
	// cached and served to several callers at once. DeepCopy a Peer before
	// modifying it. The lists are chunked and shared between plans
	// (list.go): iterate them with All.
	DesiredPeers map[string]PeerList
	// Carried holds, per target cluster, how many of its desired Peers
	// carry each source cluster (CarriedOf), kept with DesiredPeers so
	// that the Ready condition need not read every Peer of a pass.
	Carried map[string]map[string]int
	// Groups holds, per cluster, its groups' plans, sorted by name:
	// View.Clusters[].Groups, which a Plan leaves empty for the same reason.
	// ServedView fills it in.
	Groups map[string]GroupList
	// Nodes holds, per cluster, the decisions on its nodes, sorted by name:
	// View.Clusters[].Nodes, left empty likewise. ServedView fills it in.
	Nodes map[string]NodeList
	// Measured is, per cluster, the Connection its snapshot was read
	// through: the plan's diffs and figures are of that connection's
	// cluster, and stale once the entry resolves to another.
	Measured map[string]string
	// ServicesYielded are the clusters, sorted, that this mesh shares with
	// a mesh with multiClusterServices Enabled that takes precedence over
	// it (Input.OtherServicesMeshes): its ServicesClusterShared warnings
	// say what that means, and its Ready condition is False while any is.
	ServicesYielded []string
	// CheckInExpiry is when the first node the plan counts stops counting
	// unless it checks in again (zero: none will). It is as early as that
	// moment, never later: check-ins after the plan are not reported, so
	// it stays at the first seen until a plan made after it reads them
	// again. Going silent is no event; the reconciler plans again then.
	CheckInExpiry time.Time
}

// ServedView is a copy of View with every target's unchanged Peers listed,
// as the plan subresource serves it.
func (p *Plan) ServedView() *meshv1alpha1.ClusterMeshPlan {
	v := p.View.DeepCopy()
	for i := range v.Clusters {
		if n := p.Nodes[v.Clusters[i].Name].Len(); n > 0 {
			v.Clusters[i].Nodes = make([]meshv1alpha1.NodeDecision, 0, n)
			for _, d := range p.Nodes[v.Clusters[i].Name].All() {
				v.Clusters[i].Nodes = append(v.Clusters[i].Nodes, *d.DeepCopy())
			}
		}
		if n := p.Groups[v.Clusters[i].Name].Len(); n > 0 {
			v.Clusters[i].Groups = make([]meshv1alpha1.GroupPlan, 0, n)
			for _, g := range p.Groups[v.Clusters[i].Name].All() {
				v.Clusters[i].Groups = append(v.Clusters[i].Groups, *g.DeepCopy())
			}
		}
	}
	for i := range v.Targets {
		v.Targets[i].Unchanged = p.unchanged(&v.Targets[i])
	}
	return v
}

// unchanged lists the desired Peers of a target that it holds as planned,
// which View leaves out: those its diff neither creates, updates nor
// keeps (diff puts each desired Peer in one of these four). All three
// lists are sorted by name: a search each, not a scan of thousands kept.
func (p *Plan) unchanged(tp *meshv1alpha1.TargetPlan) []string {
	if tp.DiffState != meshv1alpha1.DiffStateComputed {
		return nil
	}
	var out []string
	for _, peer := range p.DesiredPeers[tp.Cluster].All() {
		name := peer.Name
		_, created := slices.BinarySearch(tp.Create, name)
		_, updated := slices.BinarySearchFunc(tp.Update, name, func(u meshv1alpha1.PeerUpdate, n string) int { return strings.Compare(u.Name, n) })
		_, kept := slices.BinarySearchFunc(tp.Kept, name, func(k meshv1alpha1.KeptPeer, n string) int { return strings.Compare(k.Name, n) })
		if !created && !updated && !kept {
			out = append(out, name)
		}
	}
	return out
}

// Target returns the diff of one target cluster; its Unchanged is empty
// (ServedView lists it).
func (p *Plan) Target(cluster string) (*meshv1alpha1.TargetPlan, bool) {
	for i := range p.View.Targets {
		if p.View.Targets[i].Cluster == cluster {
			return &p.View.Targets[i], true
		}
	}
	return nil, false
}

// Cluster returns the source-side view of one cluster; its Groups and
// Nodes are empty, they are in Plan.Groups and Plan.Nodes.
func (p *Plan) Cluster(name string) (*meshv1alpha1.ClusterPlan, bool) {
	for i := range p.View.Clusters {
		if p.View.Clusters[i].Name == name {
			return &p.View.Clusters[i], true
		}
	}
	return nil, false
}
