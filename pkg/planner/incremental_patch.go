package planner

import (
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
)

// patch builds the next plan from the last one. The last plan may still
// be read by others, so every list it changes is copied first, once.
type patch struct {
	st   *State
	now  time.Time
	plan *Plan
	// diffCopied marks the targets whose Create, Delete and Update lists
	// this patch has copied: a Next covering thousands of Peers (a cold
	// start's echoes) copies each list once, not once per Peer.
	diffCopied map[int]bool
}

func (st *State) begin(now time.Time) *patch {
	old := st.plan
	p := &Plan{View: old.View, DesiredPeers: maps.Clone(old.DesiredPeers), Carried: maps.Clone(old.Carried),
		Groups: maps.Clone(old.Groups), Nodes: maps.Clone(old.Nodes), Measured: old.Measured,
		ServicesYielded: old.ServicesYielded}
	p.View.GeneratedAt = metav1.NewTime(now.UTC())
	p.View.Clusters = slices.Clone(old.View.Clusters)
	p.View.Targets = slices.Clone(old.View.Targets)
	return &patch{st: st, now: now, plan: p, diffCopied: map[int]bool{}}
}

// decide rewrites the decisions on nodes idx of s (Plan.Nodes lists s's
// nodes in s.nodes' order) with edit: chunk by chunk when they are few,
// else as one new list, which copies a pointer per node rather than a
// chunk per decision.
func (u *patch) decide(s *source, idx []int, edit func(i int, d *meshv1alpha1.NodeDecision)) {
	list := u.plan.Nodes[s.name]
	if len(idx)*chunklist.ChunkMean < list.Len() {
		for _, i := range idx {
			d, _ := list.Get(s.nodes[i].name, nodeDecisionName)
			c := *d // shares its notes, which stay
			edit(i, &c)
			list = list.With(&c, nodeDecisionName)
		}
	} else {
		all := list.Slice()
		for _, i := range idx {
			c := *all[i]
			edit(i, &c)
			all[i] = &c
		}
		list = chunklist.Of(all, nodeDecisionName)
	}
	u.plan.Nodes[s.name] = list
}

// clock moves the plan to the new time: the credential warnings must say
// the same, and the messages of nodes whose check-in ran out name the new
// age. Next has made sure no node Kilo counts ran out meanwhile.
func (u *patch) clock() bool {
	pl := u.st.pl
	for _, s := range pl.sources {
		exp := pl.in.Clusters[s.name].CredentialExpiry
		r0, m0 := credentialWarning(pl.in, s.name, exp, pl.in.Now)
		r1, m1 := credentialWarning(pl.in, s.name, exp, u.now)
		if r0 != r1 || m0 != m1 {
			return false
		}
		var aged []int
		for _, i := range u.st.notReady[s.idx] {
			n := &s.nodes[i]
			ready, msg := checkedIn(n.node, u.now)
			if ready {
				return false
			}
			if msg != n.message {
				n.message = msg
				aged = append(aged, i)
			}
		}
		if len(aged) > 0 {
			u.decide(s, aged, func(i int, d *meshv1alpha1.NodeDecision) { d.Message = s.nodes[i].message })
		}
	}
	return true
}

// sameAnalysis reports whether two parses of a node agree on everything
// the cluster's analysis reads besides the key, the endpoints, the
// keepalive and the leader hint: its groups, addresses, readiness and notes.
func sameAnalysis(a, b *nodeInfo) bool {
	return a.name == b.name && slices.Equal(a.podCIDRs, b.podCIDRs) && a.internalIP == b.internalIP &&
		a.location == b.location && slices.Equal(a.locationIPs, b.locationIPs) && a.wireguardIP == b.wireguardIP &&
		a.granularity == b.granularity && a.kiloReady == b.kiloReady && a.reason == b.reason &&
		a.message == b.message && slices.Equal(a.notes, b.notes)
}

// node patches the plan for a node whose object was replaced; false when
// the change may reach beyond its group's Peer.
func (u *patch) node(c *NodeChange) bool {
	st, pl := u.st, u.st.pl
	si, ok := pl.byName[c.Cluster]
	if !ok || c.Old == nil || c.New == nil || c.Old.Name != c.New.Name {
		return false
	}
	s := pl.sources[si]
	if !s.reachable || s.keepReason != "" || len(s.nodes) == 0 {
		return false
	}
	i, found := slices.BinarySearchFunc(s.nodes, c.New.Name, func(n nodeInfo, name string) int { return strings.Compare(n.name, name) })
	n := &s.nodes[min(i, len(s.nodes)-1)]
	if !found || n.node != c.Old || n.reason == ReasonDuplicateNode || n.reason == ReasonInvalidNodeName || n.reason == ReasonNodeTooLarge {
		return false
	}
	if _, tooLarge := c.New.Annotations[meshv1alpha1.AnnotationNodeTooLarge]; tooLarge {
		return false
	}
	var was, is nodeInfo
	parseNode(&was, c.Old, topologyLabelOf(s.entry), u.now, nil)
	parseNode(&is, c.New, topologyLabelOf(s.entry), u.now, nil)
	if !sameAnalysis(&was, &is) {
		return false
	}
	if was.key != is.key {
		_, oldForeign := st.foreignKeys[was.key]
		_, newForeign := st.foreignKeys[is.key]
		if pl.keyClashes || st.keys[is.key] > 0 || oldForeign || newForeign {
			return false
		}
		if st.keys[was.key]--; st.keys[was.key] <= 0 {
			delete(st.keys, was.key)
		}
		st.keys[is.key]++
	}
	n.key, n.kiloEndpoint, n.leaderHint, n.keepalive, n.node = is.key, is.kiloEndpoint, is.leaderHint, is.keepalive, c.New
	if !is.kiloReady {
		return true // in no group: only its key counts, above
	}
	if at, err := kilov1alpha1.CheckInExpires(c.New); err == nil && (st.expiry.IsZero() || at.Before(st.expiry)) {
		st.expiry = at
	}
	gi, found := slices.BinarySearchFunc(s.groups, groupName(n, s.gran.value), func(g group, name string) int { return strings.Compare(g.name, name) })
	if !found {
		return false
	}
	g := &s.groups[gi]
	from := g.leader
	g.leader = findLeader(s.nodes, g.members)
	if i != from && i != g.leader {
		// checkNodes notes a member's malformed clustermesh-endpoint.
		return c.Old.Annotations[kilov1alpha1.AnnotationClusterMeshEndpoint] == c.New.Annotations[kilov1alpha1.AnnotationClusterMeshEndpoint]
	}
	return u.reexport(s, gi, from, i, &was)
}

func byPeerName(p *kilov1alpha1.Peer, name string) int { return strings.Compare(p.Name, name) }

// peer patches the plan for a Peer of this mesh created, replaced or
// deleted on a target where nothing is kept and no Peer of others is
// held: there the desired Peers do not depend on the held ones, so only
// the Peer's diff entry moves.
func (u *patch) peer(c *PeerChange) bool {
	pl := u.st.pl
	ti, ok := pl.byName[c.Cluster]
	if !ok || (c.Old == nil && c.New == nil) || (c.Old != nil && c.New != nil && c.Old.Name != c.New.Name) {
		return false
	}
	t := pl.sources[ti]
	x := &pl.held[ti]
	if t.reachable && !u.st.peerDups[ti] && !u.st.hostLimited && x.foreignUnread(c, pl) {
		return true
	}
	if !t.reachable || pl.anyKept || pl.keyClashes || len(x.foreign) > 0 || u.st.peerDups[ti] {
		return false
	}
	name := ""
	for _, p := range []*kilov1alpha1.Peer{c.Old, c.New} {
		if p != nil && !IsManagedBy(p, pl.in.MeshNamespace, pl.in.MeshName, pl.in.MeshUID) {
			return false
		}
		if p != nil {
			name = p.Name
		}
	}
	k, held := slices.BinarySearchFunc(x.managed, name, byPeerName)
	switch {
	case held != (c.Old != nil) || (held && x.managed[k] != c.Old):
		return false // not what the last plan read
	case c.New == nil:
		x.managed = slices.Delete(x.managed, k, k+1)
	case held:
		x.managed[k] = c.New
	default:
		x.managed = slices.Insert(x.managed, k, c.New)
	}
	want, _ := u.plan.DesiredPeers[t.name].Get(name, peerName)
	u.rediff(t, name, want)
	return true
}

// foreignUnread takes the change of a Peer of others that moves nothing the
// planner reads of it (its name, labels, annotations, key, addresses and
// whether kg accepts it stay; its endpoint or keepalive moved, or only its
// metadata): the plan stays as it is, and the held Peers point to the new
// object. Such a Peer is commonly another controller's, patched often
// (the benchmarks' simplest loop); planning whole for each of its changes cost a
// whole plan per change of a target holding one.
func (x *existingPeers) foreignUnread(c *PeerChange, pl *planner) bool {
	o, n := c.Old, c.New
	if o == nil || n == nil || o.Name != n.Name || IsManagedBy(o, pl.in.MeshNamespace, pl.in.MeshName, pl.in.MeshUID) ||
		IsManagedBy(n, pl.in.MeshNamespace, pl.in.MeshName, pl.in.MeshUID) || x.foreignByName[o.Name] != o ||
		!maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) || o.Spec.PublicKey != n.Spec.PublicKey ||
		!slices.Equal(o.Spec.AllowedIPs, n.Spec.AllowedIPs) || (len(o.Validate()) > 0) != (len(n.Validate()) > 0) {
		return false
	}
	i := slices.Index(x.foreign, o)
	if i < 0 {
		return false
	}
	x.foreign[i], x.foreignByName[o.Name] = n, n
	return true
}

// rediff moves one name to the list of target t's diff it now belongs to,
// as diff would have put it there; want is its desired Peer, nil if none.
// Nothing of t is kept. A list the name stays in or out of is not copied.
func (u *patch) rediff(t *source, name string, want *kilov1alpha1.Peer) {
	tp := &u.plan.View.Targets[t.idx]
	managed := u.st.pl.held[t.idx].managed
	var have *kilov1alpha1.Peer
	if k, ok := slices.BinarySearchFunc(managed, name, byPeerName); ok {
		have = managed[k]
	}
	var fields []string
	if want != nil && have != nil {
		fields = changedFields(want, have)
	}
	if !u.diffCopied[t.idx] {
		u.diffCopied[t.idx] = true
		tp.Create, tp.Delete, tp.Update = slices.Clone(tp.Create), slices.Clone(tp.Delete), slices.Clone(tp.Update)
	}
	tp.Create = placed(tp.Create, name, want != nil && have == nil)
	tp.Delete = placed(tp.Delete, name, want == nil && have != nil)
	k, ok := slices.BinarySearchFunc(tp.Update, name, func(p meshv1alpha1.PeerUpdate, n string) int { return strings.Compare(p.Name, n) })
	switch {
	case len(fields) > 0 && ok && slices.Equal(tp.Update[k].Fields, fields):
	case len(fields) > 0 && ok:
		tp.Update[k] = meshv1alpha1.PeerUpdate{Name: name, Fields: fields}
	case len(fields) > 0:
		tp.Update = slices.Insert(tp.Update, k, meshv1alpha1.PeerUpdate{Name: name, Fields: fields})
	case ok:
		tp.Update = slices.Delete(tp.Update, k, k+1)
	}
	// diff leaves a list nil unless it appends to it, but for the one it
	// sizes in advance: Create with nothing held.
	for _, l := range []*[]string{&tp.Create, &tp.Delete} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(tp.Update) == 0 {
		tp.Update = nil
	}
	if len(managed) == 0 && tp.Create == nil {
		tp.Create = []string{}
	}
}

// placed returns a sorted list, which the patch owns, with or without name.
func placed(list []string, name string, in bool) []string {
	k, ok := slices.BinarySearch(list, name)
	switch {
	case ok == in:
		return list
	case in:
		return slices.Insert(list, k, name)
	default:
		return slices.Delete(list, k, k+1)
	}
}
