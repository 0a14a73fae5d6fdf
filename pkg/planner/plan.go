package planner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/chunklist"
)

// planner holds the state of one Compute call.
type planner struct {
	in      *Input
	issues  *issues
	sources []*source // sorted by name
	byName  map[string]int
	// declared holds the named declared networks of each source, for messages.
	declared [][]declaredNetwork
	// overlap[a][b] is true when the declared networks of a and b overlap.
	overlap [][]bool
	// order holds every ready export, sorted by Peer name; templates
	// holds their Peers, in the same order. Templates are shared by every
	// target's DesiredPeers and never modified.
	order     []*export
	templates []*kilov1alpha1.Peer
	// readyExports counts the ready exports of each source.
	readyExports []int
	// overlapsOthers[t] is true when t's declared networks overlap another's.
	overlapsOthers []bool
	// keyClashes is true when some export's key is shared or a node's elsewhere.
	keyClashes bool
	// anyKept is true when some source's Peers are kept as they are.
	anyKept bool
	// hostRestricted is true when host access withholds something.
	hostRestricted bool
	// scratch is the buffer batches write into, reused by one after another.
	scratch []byte
	// otherMeshIndexes are the claims of other meshes by (target, source).
	otherMeshIndexes map[[2]int]*prefixIndex
	// refusedEndpoints say why a ready export may not be a Peer on the
	// local cluster for its endpoint; nil when none is refused.
	refusedEndpoints map[*export]string
	// held keeps what each target holds, by source index, for incremental
	// planning (incremental.go); nil when nobody needs it.
	held []existingPeers
}

// Compute plans a mesh: for every member cluster, the decision on each of
// its nodes and groups; for every target cluster, the Peers it must hold and
// the changes to the Peers it holds; the conflicts and warnings met. It is
// deterministic: the same input, in any order, gives the same plan. It only
// fails on input no plan can be made of.
func Compute(in Input) (*Plan, error) {
	plan, _, err := compute(in, false)
	return plan, err
}

// compute is Compute, which also returns its working state; with keepHeld
// that state keeps what every target holds.
func compute(in Input, keepHeld bool) (*Plan, *planner, error) {
	if err := validateInput(&in); err != nil {
		return nil, nil, fmt.Errorf("planning ClusterMesh %s/%s: %w", in.MeshNamespace, in.MeshName, err)
	}
	pl := &planner{in: &in, issues: newIssues(), byName: map[string]int{}}
	if keepHeld {
		pl.held = make([]existingPeers, len(in.Spec.Clusters))
	}
	pl.loadSources()
	pl.checkSameClusters()
	pl.checkDeclaredOverlaps()
	pl.sweepClaims()
	for _, s := range pl.sources {
		if s.reachable {
			pl.finalize(s)
		}
	}
	pl.indexExports()
	for _, s := range pl.sources {
		pl.anyKept = pl.anyKept || s.keepReason != ""
	}
	pl.checkHostEndpoints()
	pl.hostRestricted = pl.restrictedByHostAccess() || pl.refusedEndpoints != nil

	plan := &Plan{
		View: meshv1alpha1.ClusterMeshPlan{
			TypeMeta:    metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMeshPlan"},
			ObjectMeta:  metav1.ObjectMeta{Namespace: in.MeshNamespace, Name: in.MeshName},
			GeneratedAt: metav1.NewTime(in.Now.UTC()),
			HostAccess:  hostAccessView(&in.HostAccess),
		},
		DesiredPeers:  make(map[string]PeerList, len(pl.sources)),
		Carried:       make(map[string]map[string]int, len(pl.sources)),
		Groups:        make(map[string]GroupList, len(pl.sources)),
		Nodes:         make(map[string]NodeList, len(pl.sources)),
		Measured:      make(map[string]string, len(pl.sources)),
		CheckInExpiry: pl.earliestExpiry(),
	}
	for _, c := range in.Spec.Clusters {
		plan.Measured[c.Name] = in.Clusters[c.Name].Connection
	}
	drafts := make([]*draft, len(pl.sources))
	for _, s := range pl.sources {
		view := s.view
		plan.Groups[s.name], view.Groups = groupListOf(view.Groups), nil
		plan.Nodes[s.name], view.Nodes = NodeListOf(view.Nodes...), nil
		plan.View.Clusters = append(plan.View.Clusters, view)
		drafts[s.idx] = pl.planTarget(s)
	}
	plan.View.Relay, plan.View.Paths = pl.relay(drafts)
	for _, s := range pl.sources {
		tp, peers := drafts[s.idx].finish(s)
		plan.View.Targets = append(plan.View.Targets, tp)
		plan.DesiredPeers[s.name] = chunklist.Of(peers, peerName)
		plan.Carried[s.name] = CarriedOf(plan.DesiredPeers[s.name])
	}
	plan.ServicesYielded = pl.checkServicesShared()
	plan.View.Conflicts, plan.View.Warnings = pl.issues.lists()
	return plan, pl, nil
}

func validateInput(in *Input) error {
	var errs []error
	if in.MeshNamespace == "" || in.MeshName == "" {
		errs = append(errs, errors.New("mesh namespace and name are required"))
	}
	if in.MeshUID == "" {
		errs = append(errs, errors.New("mesh UID is required: it is what marks the Peers the mesh owns"))
	}
	if in.Now.IsZero() {
		errs = append(errs, errors.New("the current time is required"))
	}
	if err := validateHostAccess(in); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	for _, c := range in.Spec.Clusters {
		switch {
		case c.Name == "":
			errs = append(errs, errors.New("a cluster has no name"))
		case seen[c.Name]:
			errs = append(errs, fmt.Errorf("cluster %q appears twice", c.Name))
		}
		seen[c.Name] = true
	}
	return errors.Join(errs...)
}

// loadSources parses every member cluster's declared networks and analyses
// the reachable ones.
func (pl *planner) loadSources() {
	entries := make([]*meshv1alpha1.ClusterEntry, len(pl.in.Spec.Clusters))
	for i := range pl.in.Spec.Clusters {
		entries[i] = &pl.in.Spec.Clusters[i]
	}
	slices.SortFunc(entries, func(a, b *meshv1alpha1.ClusterEntry) int { return strings.Compare(a.Name, b.Name) })
	for i, e := range entries {
		s := &source{idx: i, name: e.Name, entry: e, extrasHolder: -1}
		var named []declaredNetwork
		var problems []string
		s.nets, named, problems = parseNetworks(e)
		for _, p := range problems {
			pl.issues.conflict(ConflictInvalidNetwork, s.name, "", "declared networks that cannot be used", p)
		}
		s.labels = ManagedLabels(pl.in.MeshNamespace, pl.in.MeshName, pl.in.MeshUID, s.name)
		if pl.in.Installation != "" {
			s.labels[LabelInstallation] = pl.in.Installation
		}
		pl.sources = append(pl.sources, s)
		pl.declared = append(pl.declared, named)
		pl.byName[s.name] = i
	}
	for _, name := range sortedKeys(pl.in.Clusters) {
		if _, ok := pl.byName[name]; !ok {
			pl.issues.warning(WarningUnknownCluster, name, "", "a snapshot was given for a cluster the mesh does not list; ignored", "")
		}
	}
	for _, s := range pl.sources {
		snap, ok := pl.in.Clusters[s.name]
		pl.checkCredential(s.name, snap.CredentialExpiry)
		switch {
		case !ok:
			s.err = "no snapshot of the cluster was taken"
		case !snap.Reachable:
			s.err = snap.Error
			if s.err == "" {
				s.err = "the cluster could not be read"
			}
		default:
			s.reachable = true
			s.snapshot = &snap
			pl.analyze(s, s.snapshot)
			continue
		}
		s.keepReason = KeptSourceUnreachable
		s.view = meshv1alpha1.ClusterPlan{Name: s.name, Error: s.err, BehindNAT: s.entry.BehindNAT}
		pl.issues.warning(WarningClusterUnreachable, s.name, "",
			"the cluster is unreachable: the Peers representing it elsewhere are kept as they are, and its own Peers are not compared", "")
	}
}

// indexExports orders the ready exports by Peer name and finds the public
// keys that would make kg confuse two Peers: keys shared by exports, and
// keys of nodes in other clusters. Both are rare, so the common case costs
// one map entry per key and nothing else.
func (pl *planner) indexExports() {
	type keyUse struct {
		cluster  int   // the first cluster with a node holding the key
		clusters []int // all of them, once there are several
		export   *export
		exports  []*export // all ready exports with the key, once there are several
	}
	nodes, exports := 0, 0
	for _, s := range pl.sources {
		nodes += len(s.nodes)
		exports += len(s.exports)
	}
	// The map holds indexes into uses, so that it stays small and an entry
	// is updated in place.
	index := make(map[string]int32, nodes)
	uses := make([]keyUse, 0, nodes)
	use := func(key string, cluster int) (i int32, seen bool) {
		if i, ok := index[key]; ok {
			return i, true
		}
		index[key] = int32(len(uses))
		uses = append(uses, keyUse{cluster: cluster})
		return int32(len(uses) - 1), false
	}
	// nodeUse[s][i] is the entry of node i of source s, -1 if it has no key.
	nodeUse := make([][]int32, len(pl.sources))
	for _, s := range pl.sources {
		nodeUse[s.idx] = make([]int32, len(s.nodes))
		for i := range s.nodes {
			k := s.nodes[i].key
			if k == "" {
				nodeUse[s.idx][i] = -1
				continue
			}
			ui, seen := use(k, s.idx)
			nodeUse[s.idx][i] = ui
			u := &uses[ui]
			switch {
			case !seen:
			case len(u.clusters) == 0 && u.cluster != s.idx:
				u.clusters = []int{u.cluster, s.idx}
			case len(u.clusters) > 0 && u.clusters[len(u.clusters)-1] != s.idx:
				u.clusters = append(u.clusters, s.idx)
			}
		}
	}
	pl.order = make([]*export, 0, exports)
	useOf := make([]int32, 0, exports) // of each export in pl.order, before sorting
	for _, s := range pl.sources {
		for ei := range s.exports {
			e := &s.exports[ei]
			if !e.ready {
				continue
			}
			pl.order = append(pl.order, e)
			// An export's key is its leader's; a leader without one has no
			// entry yet and gets one with no cluster.
			ui := nodeUse[s.idx][s.groups[e.group].leader]
			if ui < 0 {
				ui, _ = use(e.key, -1)
			}
			useOf = append(useOf, ui)
			u := &uses[ui]
			switch {
			case u.export == nil:
				u.export = e
			case u.exports == nil:
				u.exports = []*export{u.export, e}
			default:
				u.exports = append(u.exports, e)
			}
		}
	}
	pl.readyExports = make([]int, len(pl.sources))
	for i, e := range pl.order {
		u := &uses[useOf[i]]
		e.keyClusters, e.keyShared = u.clusters, u.exports
		pl.keyClashes = pl.keyClashes || u.clusters != nil || u.exports != nil
		pl.readyExports[e.src]++
	}
	slices.SortFunc(pl.order, func(a, b *export) int { return strings.Compare(a.name, b.name) })
	// The templates in order, so that a target's Peers can be copied from
	// them in runs.
	pl.templates = make([]*kilov1alpha1.Peer, len(pl.order))
	for i, e := range pl.order {
		pl.templates[i] = e.peer
	}
}
