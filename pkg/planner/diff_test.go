package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// applied is the fixture mesh after a reconciler applied its first plan.
func applied(t *testing.T) Input {
	t.Helper()
	in := testInput(t)
	return withPeers(in, mustCompute(t, in))
}

func addPeer(in *Input, cluster string, p *kilov1alpha1.Peer) {
	snap := in.Clusters[cluster]
	snap.Peers = snap.Peers.With(p, peerName)
	in.Clusters[cluster] = snap
}

func foreignPeer(name, key string, allowed ...string) *kilov1alpha1.Peer {
	return &kilov1alpha1.Peer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "other"}},
		Spec:       kilov1alpha1.PeerSpec{PublicKey: key, AllowedIPs: allowed},
	}
}

func target(t *testing.T, p *Plan, cluster string) *meshv1alpha1.TargetPlan {
	t.Helper()
	v := p.ServedView()
	i := slices.IndexFunc(v.Targets, func(tp meshv1alpha1.TargetPlan) bool { return tp.Cluster == cluster })
	if i < 0 {
		t.Fatalf("no target %s", cluster)
	}
	return &v.Targets[i]
}

func updateNames(tp *meshv1alpha1.TargetPlan) []string {
	var out []string
	for _, u := range tp.Update {
		out = append(out, u.Name+":"+strings.Join(u.Fields, "+"))
	}
	return out
}

func TestDiffFirstPlanCreatesEverything(t *testing.T) {
	p := mustCompute(t, testInput(t))
	for _, c := range []string{"eu", "us", "home"} {
		tp := target(t, p, c)
		if tp.DiffState != meshv1alpha1.DiffStateComputed || len(tp.Create) != p.DesiredPeers[c].Len() || int(tp.DesiredPeers) != len(tp.Create) {
			t.Errorf("%s: %+v", c, tp)
		}
		if len(tp.Update)+len(tp.Delete)+len(tp.Unchanged)+len(tp.Kept) > 0 {
			t.Errorf("%s: %+v", c, tp)
		}
	}
}

func TestDiffSteadyState(t *testing.T) {
	in := applied(t)
	p := mustCompute(t, in)
	for _, c := range []string{"eu", "us", "home"} {
		tp := target(t, p, c)
		if len(tp.Unchanged) != p.DesiredPeers[c].Len() || len(tp.Create)+len(tp.Update)+len(tp.Delete) > 0 {
			t.Errorf("%s: %+v", c, tp)
		}
	}
}

func TestDiff(t *testing.T) {
	fra := PeerName(testNamespace, testMesh, "eu", "location:fra")
	ams := PeerName(testNamespace, testMesh, "eu", "location:ams")
	edge := PeerName(testNamespace, testMesh, "eu", "node:edge-1")
	us1 := PeerName(testNamespace, testMesh, "us", "node:us-1")
	us2 := PeerName(testNamespace, testMesh, "us", "node:us-2")
	us3 := PeerName(testNamespace, testMesh, "us", "node:us-3")
	home := PeerName(testNamespace, testMesh, "home", "location:home")
	for _, tc := range []struct {
		name      string
		mutate    func(t *testing.T, in *Input)
		target    string
		state     meshv1alpha1.DiffState
		create    []string
		update    []string
		delete    []string
		unchanged []string
		kept      []meshv1alpha1.KeptPeer
		conflict  string
	}{
		{
			name: "leader change updates key, endpoint, addresses and the leader annotation", target: "us",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "fra-1"), kilov1alpha1.AnnotationLastSeen, "1")
			},
			update:    []string{fra + ":metadata.annotations+spec.allowedIPs+spec.endpoint+spec.publicKey"},
			unchanged: []string{ams, edge, home},
		},
		{
			name: "a node joins a location: only its Peer changes", target: "home",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "fra-3"), kilov1alpha1.AnnotationLastSeen, "1795175999")
			},
			update:    []string{fra + ":spec.allowedIPs"},
			unchanged: []string{ams, edge, us1, us2, us3},
		},
		{
			name: "a group disappears: its Peer is deleted", target: "us",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "edge-1"), kilov1alpha1.AnnotationLastSeen, "1")
			},
			delete:    []string{edge},
			unchanged: []string{ams, fra, home},
		},
		{
			name: "keepalive changes", target: "eu",
			mutate:    func(t *testing.T, in *Input) { entry(in, "home").PersistentKeepalive = 15 },
			update:    []string{home + ":spec.persistentKeepalive"},
			unchanged: []string{us1, us2, us3},
		},
		{
			name: "unreachable source: its Peers are kept as they are", target: "eu",
			mutate: func(t *testing.T, in *Input) {
				in.Clusters["us"] = ClusterSnapshot{Reachable: false, Error: "Unauthorized"}
			},
			unchanged: []string{home},
			kept: []meshv1alpha1.KeptPeer{
				{Name: us1, SourceCluster: "us", Reason: KeptSourceUnreachable},
				{Name: us2, SourceCluster: "us", Reason: KeptSourceUnreachable},
				{Name: us3, SourceCluster: "us", Reason: KeptSourceUnreachable},
			},
		},
		{
			name: "source without a snapshot counts as unreachable", target: "home",
			mutate:    func(t *testing.T, in *Input) { delete(in.Clusters, "eu") },
			unchanged: []string{us1, us2, us3},
			kept: []meshv1alpha1.KeptPeer{
				{Name: ams, SourceCluster: "eu", Reason: KeptSourceUnreachable},
				{Name: fra, SourceCluster: "eu", Reason: KeptSourceUnreachable},
				{Name: edge, SourceCluster: "eu", Reason: KeptSourceUnreachable},
			},
		},
		{
			name: "every node of a source looks dead at once: its Peers are kept", target: "eu",
			mutate: func(t *testing.T, in *Input) {
				for _, n := range in.Clusters["us"].Nodes.All() {
					annotate(n, kilov1alpha1.AnnotationLastSeen, "1")
				}
			},
			unchanged: []string{home},
			kept: []meshv1alpha1.KeptPeer{
				{Name: us1, SourceCluster: "us", Reason: KeptNoReadyGroups},
				{Name: us2, SourceCluster: "us", Reason: KeptNoReadyGroups},
				{Name: us3, SourceCluster: "us", Reason: KeptNoReadyGroups},
			},
		},
		{
			name: "unreachable target: nothing is known", target: "us", state: meshv1alpha1.DiffStateUnknown,
			mutate: func(t *testing.T, in *Input) { in.Clusters["us"] = ClusterSnapshot{Error: "connection refused"} },
		},
		{
			name: "a cluster leaves the mesh: its Peers are deleted", target: "eu",
			mutate: func(t *testing.T, in *Input) {
				in.Spec.Clusters = slices.DeleteFunc(in.Spec.Clusters, func(c meshv1alpha1.ClusterEntry) bool { return c.Name == "us" })
			},
			unchanged: []string{home},
			delete:    []string{us1, us2, us3},
		},
		{
			name: "Peers of another mesh, or of none, are never touched", target: "eu",
			mutate: func(t *testing.T, in *Input) {
				other := foreignPeer("other-mesh-peer", "jici45su7gbkMSQMXaTs81JSNEphhCRQPKuGuJHW4Iw=", "10.200.0.0/16")
				other.Labels = ManagedLabels(testNamespace, testMesh, "an-earlier-uid", "us")
				addPeer(in, "eu", other)
				addPeer(in, "eu", foreignPeer("hand-made", "poDRyZi1k/Q97oTX9tc/GcXEmH7KYc3incxDV3qiVE0=", "10.201.0.0/16"))
			},
			unchanged: []string{home, us1, us3},
			kept:      []meshv1alpha1.KeptPeer{{Name: us2, SourceCluster: "us", Reason: ConflictPublicKeyInUse}},
			conflict:  ConflictPublicKeyInUse,
		},
		{
			name: "a name held by an earlier mesh of the same name", target: "us",
			mutate: func(t *testing.T, in *Input) {
				snap := in.Clusters["us"]
				snap.Peers = heldPeers()
				in.Clusters["us"] = snap
				stale := foreignPeer(fra, "wsAkfjicLBzvHI1CmlzZEymVWGRFGd/gC+nalls4Kdk=", "10.202.0.0/16")
				stale.Labels = ManagedLabels(testNamespace, testMesh, "an-earlier-uid", "eu")
				addPeer(in, "us", stale)
			},
			create:   []string{ams, edge, home},
			conflict: ConflictNameTaken,
		},
		{
			name: "a foreign Peer claiming our addresses wins them on that target", target: "home",
			mutate: func(t *testing.T, in *Input) {
				addPeer(in, "home", foreignPeer("legacy-us-2", "NDPORFg3S0saAP3O5mot+ORDEQPzolRCBKb46FXY5vM=", "10.20.2.0/24"))
			},
			update:    []string{us2 + ":spec.allowedIPs"},
			unchanged: []string{ams, edge, fra, us1, us3},
			conflict:  ConflictCIDRClaimedByForeign,
		},
		{
			name: "one key on two clusters' leaders", target: "home",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "us", "us-3"), kilov1alpha1.AnnotationKey, node(t, *in, "eu", "edge-1").Annotations[kilov1alpha1.AnnotationKey])
			},
			unchanged: []string{ams, fra, us1, us2},
			kept: []meshv1alpha1.KeptPeer{
				{Name: edge, SourceCluster: "eu", Reason: ConflictDuplicatePublicKey},
				{Name: us3, SourceCluster: "us", Reason: ConflictDuplicatePublicKey},
			},
			conflict: ConflictDuplicatePublicKey,
		},
		{
			name: "a leader with the key of a node of the target", target: "us",
			mutate: func(t *testing.T, in *Input) {
				annotate(node(t, *in, "eu", "edge-1"), kilov1alpha1.AnnotationKey, node(t, *in, "us", "us-3").Annotations[kilov1alpha1.AnnotationKey])
			},
			unchanged: []string{ams, fra, home},
			kept:      []meshv1alpha1.KeptPeer{{Name: edge, SourceCluster: "eu", Reason: ConflictPublicKeyOfTargetNode}},
			conflict:  ConflictPublicKeyOfTargetNode,
		},
		{
			name: "a managed Peer edited by hand is put back", target: "eu",
			mutate: func(t *testing.T, in *Input) {
				if p, ok := in.Clusters["eu"].Peers.Get(home, peerName); ok {
					p.Spec.Endpoint = nil
					p.Labels[LabelSourceCluster] = "elsewhere"
					p.Spec.PresharedKey = "user-set, not ours"
				}
			},
			update:    []string{home + ":metadata.labels+spec.endpoint"},
			unchanged: []string{us1, us2, us3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := applied(t)
			if tc.mutate != nil {
				tc.mutate(t, &in)
			}
			p := mustCompute(t, in)
			checkPlanInvariants(t, in, p)
			tp := target(t, p, tc.target)
			state := tc.state
			if state == "" {
				state = meshv1alpha1.DiffStateComputed
			}
			if tp.DiffState != state {
				t.Errorf("diffState %s, want %s", tp.DiffState, state)
			}
			sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
			for _, c := range []struct {
				what      string
				got, want []string
			}{
				{"create", tp.Create, tc.create},
				{"update", updateNames(tp), tc.update},
				{"delete", tp.Delete, tc.delete},
				{"unchanged", sorted(tp.Unchanged), sorted(tc.unchanged)},
			} {
				if !slices.Equal(sorted(c.got), sorted(c.want)) {
					t.Errorf("%s\n got %v\nwant %v", c.what, c.got, c.want)
				}
			}
			wantKept := slices.Clone(tc.kept)
			slices.SortFunc(wantKept, func(a, b meshv1alpha1.KeptPeer) int { return strings.Compare(a.Name, b.Name) })
			if !slices.Equal(tp.Kept, wantKept) {
				t.Errorf("kept\n got %+v\nwant %+v", tp.Kept, wantKept)
			}
			if tc.conflict != "" {
				if i, ok := findIssue(p.View.Conflicts, tc.conflict); !ok || i.Target != tc.target {
					t.Errorf("no %s conflict on %s in %+v", tc.conflict, tc.target, p.View.Conflicts)
				}
			}
			// Kept Peers stay in the desired list exactly as they were, so
			// applying the plan leaves them alone.
			for _, k := range tp.Kept {
				have, _ := in.Clusters[tc.target].Peers.Get(k.Name, peerName)
				want, _ := p.DesiredPeers[tc.target].Get(k.Name, peerName)
				if have == nil || want == nil || len(changedFields(want, have)) > 0 {
					t.Errorf("kept Peer %s not carried over unchanged", k.Name)
				}
			}
		})
	}
}

// While us is unreachable, its kept Peers hold their addresses on eu: a
// newcomer claiming one of them does not get it there.
func TestKeptPeersHoldTheirAddresses(t *testing.T) {
	in := applied(t)
	in.Clusters["us"] = ClusterSnapshot{Error: "timeout"}
	entry(&in, "home").PodCIDRs = []string{"10.30.0.0/16", "10.20.3.0/24"} // us-3's pod CIDR
	node(t, in, "home", "home-3").Spec.PodCIDR = "10.20.3.0/24"
	p := mustCompute(t, in)
	checkPlanInvariants(t, in, p)
	if slices.Contains(peerOf(t, p, "eu", "home", "location:home").Spec.AllowedIPs, "10.20.3.0/24") {
		t.Error("eu would get 10.20.3.0/24 from two Peers")
	}
	if i, ok := findIssue(p.View.Conflicts, ConflictCIDRClaimedByKept); !ok || i.Target != "eu" {
		t.Errorf("conflicts %+v", p.View.Conflicts)
	}
	// On home, the spec now gives that range to home itself: containment is
	// not a guess, so the kept Peer loses the range there.
	us3 := PeerName(testNamespace, testMesh, "us", "node:us-3")
	if got := updateNames(target(t, p, "home")); !slices.Contains(got, us3+":spec.allowedIPs") {
		t.Errorf("home updates %v", got)
	}
	if peer := peerOf(t, p, "home", "us", "node:us-3"); peer == nil || slices.Contains(peer.Spec.AllowedIPs, "10.20.3.0/24") {
		t.Errorf("home's Peer for us-3: %+v", peer)
	}
}

func TestKeptInvalidPeerIsNeitherAppliedNorDeleted(t *testing.T) {
	in := applied(t)
	in.Clusters["us"] = ClusterSnapshot{Error: "timeout"}
	us1 := PeerName(testNamespace, testMesh, "us", "node:us-1")
	if p, ok := in.Clusters["eu"].Peers.Get(us1, peerName); ok {
		p.Spec.PublicKey = "broken"
	}
	p := mustCompute(t, in)
	tp := target(t, p, "eu")
	if slices.Contains(tp.Delete, us1) || !slices.ContainsFunc(tp.Kept, func(k meshv1alpha1.KeptPeer) bool { return k.Name == us1 }) {
		t.Errorf("target %+v", tp)
	}
	if peerOf(t, p, "eu", "us", "node:us-1") != nil {
		t.Error("an invalid Peer is in the desired list")
	}
	if _, ok := findIssue(p.View.Conflicts, ConflictInvalidPeer); !ok {
		t.Error("no conflict for the invalid kept Peer")
	}
}

func TestComputeRejectsUnusableInput(t *testing.T) {
	for name, mutate := range map[string]func(in *Input){
		"no uid":       func(in *Input) { in.MeshUID = "" },
		"no name":      func(in *Input) { in.MeshName = "" },
		"no time":      func(in *Input) { in.Now = time.Time{} },
		"twin cluster": func(in *Input) { in.Spec.Clusters = append(in.Spec.Clusters, in.Spec.Clusters[0]) },
		"nameless":     func(in *Input) { in.Spec.Clusters[0].Name = "" },
	} {
		t.Run(name, func(t *testing.T) {
			in := testInput(t)
			mutate(&in)
			if _, err := Compute(in); err == nil {
				t.Error("Compute accepted it")
			}
		})
	}
}

// TestInstallationLabel: every Peer carries the installation, and a Peer
// written before Peers carried it is updated to carry it, nothing else.
func TestInstallationLabel(t *testing.T) {
	in := applied(t) // planned without an installation
	in.Installation = "9a3c4e7e-0000-4000-8000-000000000001"
	p := mustCompute(t, in)
	for c, peers := range p.DesiredPeers {
		for _, peer := range peers.All() {
			if peer.Labels[LabelInstallation] != in.Installation {
				t.Fatalf("%s: Peer %s labels %v", c, peer.Name, peer.Labels)
			}
		}
		tp := target(t, p, c)
		if len(tp.Update) != peers.Len() || len(tp.Create)+len(tp.Delete)+len(tp.Unchanged) > 0 {
			t.Errorf("%s: %+v", c, tp)
		}
		for _, u := range tp.Update {
			if !slices.Equal(u.Fields, []string{"metadata.labels"}) {
				t.Errorf("%s: %s changes %v", c, u.Name, u.Fields)
			}
		}
	}
	again := mustCompute(t, withPeers(in, p))
	for c := range again.DesiredPeers {
		if tp := target(t, again, c); len(tp.Update) > 0 {
			t.Errorf("%s once labelled: %+v", c, tp.Update)
		}
	}
}
