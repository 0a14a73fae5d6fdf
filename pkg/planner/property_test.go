package planner

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// propertySeeds is how many random meshes each property is checked on.
const propertySeeds = 300

// randomMesh draws a small mesh with everything that can go wrong going
// wrong now and then: overlapping declarations, duplicate keys and pod
// CIDRs, malformed annotations, dead nodes, a node name held twice,
// foreign and stale Peers, unreachable clusters.
func randomMesh(r *rand.Rand) Input {
	pick := func(p float64) bool { return r.Float64() < p }
	keys := make([]string, 12)
	for i := range keys {
		b := make([]byte, 32)
		r.Read(b)
		keys[i] = base64.StdEncoding.EncodeToString(b)
	}
	in := Input{MeshNamespace: "ns", MeshName: "m", MeshUID: "uid", Now: fixtureNow, Clusters: map[string]ClusterSnapshot{}}
	nClusters := 2 + r.Intn(3)
	for c := 0; c < nClusters; c++ {
		name := fmt.Sprintf("c%d", c)
		base := c
		if pick(0.15) {
			base = r.Intn(nClusters) // declarations overlapping another cluster's
		}
		e := meshv1alpha1.ClusterEntry{
			Name:          name,
			PodCIDRs:      []string{fmt.Sprintf("10.%d.0.0/16", 10+base)},
			WireguardCIDR: fmt.Sprintf("10.%d.0.0/%d", 100+base, []int{16, 16, 16, 30}[r.Intn(4)]),
			WireguardPort: int32(51820 + r.Intn(2)),
		}
		if pick(0.3) {
			e.PodCIDRs = append(e.PodCIDRs, fmt.Sprintf("fd%02x::/56", 10+base))
		}
		if pick(0.7) {
			e.ServiceCIDR = fmt.Sprintf("10.%d.0.0/16", 200+base)
		}
		if pick(0.3) {
			e.AdditionalCIDRs = []string{fmt.Sprintf("172.%d.0.0/16", 16+r.Intn(4))}
		}
		if pick(0.6) {
			e.NodeCIDRs = []string{fmt.Sprintf("192.168.%d.0/24", base)}
		}
		if pick(0.3) {
			e.PersistentKeepalive = 25
		}
		e.Granularity = []meshv1alpha1.Granularity{"", meshv1alpha1.GranularityAuto, meshv1alpha1.GranularityLocation, meshv1alpha1.GranularityFull, meshv1alpha1.GranularityCross}[r.Intn(5)]
		in.Spec.Clusters = append(in.Spec.Clusters, e)

		var nodes []*corev1.Node
		for n := 0; n < r.Intn(9); n++ {
			nodes = append(nodes, randomNode(r, fmt.Sprintf("%s-n%d", name, n), base, keys))
		}
		if len(nodes) > 0 && pick(0.1) {
			// A name held twice is the one order of a list left to shuffle.
			nodes = append(nodes, randomNode(r, nodes[r.Intn(len(nodes))].Name, base, keys))
		}
		in.Clusters[name] = ClusterSnapshot{Reachable: true, Nodes: nodesOf(nodes...)}
	}

	// Reachability: some clusters behind NAT, sometimes a relay named
	// (which may itself be behind NAT: the planner must refuse it).
	if pick(0.5) {
		for i := range in.Spec.Clusters {
			in.Spec.Clusters[i].BehindNAT = pick(0.5)
		}
		if pick(0.3) {
			in.Spec.RelayCluster = in.Spec.Clusters[r.Intn(nClusters)].Name
		}
	}

	// Peers: an earlier plan, applied, plus Peers of others.
	if pick(0.7) {
		earlier := in
		earlier.Clusters = map[string]ClusterSnapshot{}
		for name, snap := range in.Clusters {
			var nodes []*corev1.Node
			for _, n := range snap.Nodes.All() {
				n = n.DeepCopy()
				if pick(0.3) {
					annotate(n, kilov1alpha1.AnnotationLastSeen, strconv.FormatInt(fixtureNow.Unix()-int64(r.Intn(120)), 10))
				}
				nodes = append(nodes, n)
			}
			earlier.Clusters[name] = ClusterSnapshot{Reachable: true, Nodes: nodesOf(nodes...)}
		}
		if p, err := Compute(earlier); err == nil {
			in = withPeers(in, p)
		}
		if pick(0.2) {
			// A cluster changed its reachability since that plan.
			in.Spec.Clusters = slices.Clone(in.Spec.Clusters)
			c := &in.Spec.Clusters[r.Intn(nClusters)]
			c.BehindNAT = !c.BehindNAT
		}
	}
	for name, snap := range in.Clusters {
		peers := snap.Peers.Slice()
		for f := 0; f < r.Intn(3); f++ {
			p := &kilov1alpha1.Peer{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("foreign-%d", f)},
				Spec: kilov1alpha1.PeerSpec{
					PublicKey:  keys[r.Intn(len(keys))],
					AllowedIPs: []string{fmt.Sprintf("10.%d.%d.0/24", 10+r.Intn(nClusters), r.Intn(8))},
				},
			}
			if pick(0.3) {
				p.Labels = ManagedLabels("ns", "m", "older-uid", "c0")
				p.Name = PeerName("ns", "m", "c0", "location:a")
			}
			peers = append(peers, p)
		}
		snap.Peers = heldPeers(peers...) // may hold a name twice, after the one withPeers put there
		if pick(0.15) {
			snap = ClusterSnapshot{Error: "unreachable", Peers: snap.Peers, Nodes: snap.Nodes}
		}
		in.Clusters[name] = snap
	}
	return in
}

func randomNode(r *rand.Rand, name string, base int, keys []string) *corev1.Node {
	pick := func(p float64) bool { return r.Float64() < p }
	a := map[string]string{
		kilov1alpha1.AnnotationKey:        keys[r.Intn(len(keys))],
		kilov1alpha1.AnnotationLastSeen:   strconv.FormatInt(fixtureNow.Unix()-int64(r.Intn(80)), 10),
		kilov1alpha1.AnnotationInternalIP: fmt.Sprintf("192.168.%d.%d/24", base, 1+r.Intn(20)),
		kilov1alpha1.AnnotationEndpoint:   []string{"203.0.113.%d:51820", "10.9.0.%d:51820", "[2001:db8::%d]:51820"}[r.Intn(3)],
	}
	a[kilov1alpha1.AnnotationEndpoint] = fmt.Sprintf(a[kilov1alpha1.AnnotationEndpoint], 1+r.Intn(250))
	if pick(0.7) {
		a[kilov1alpha1.AnnotationLocation] = []string{"a", "b", ""}[r.Intn(3)]
	}
	if pick(0.2) {
		a[kilov1alpha1.AnnotationLeader] = ""
	}
	if pick(0.1) {
		a[kilov1alpha1.AnnotationForceInternalIP] = "-"
	}
	if pick(0.2) {
		a[kilov1alpha1.AnnotationPersistentKeepalive] = []string{"25", "0", "x"}[r.Intn(3)]
	}
	if pick(0.2) {
		a[kilov1alpha1.AnnotationClusterMeshEndpoint] = []string{"-", "wg.example.com:51820", "bad"}[r.Intn(3)]
	}
	if pick(0.2) {
		a[kilov1alpha1.AnnotationAllowedLocationIPs] = fmt.Sprintf("192.168.%d.%d/30,10.%d.%d.0/24", base, 4*r.Intn(64), 10+base, r.Intn(8))
	}
	if pick(0.3) {
		a[kilov1alpha1.AnnotationGranularity] = []string{"location", "full", "cross", "bogus"}[r.Intn(4)]
	}
	if pick(0.2) {
		a[kilov1alpha1.AnnotationWireGuardIP] = fmt.Sprintf("10.%d.0.%d/16", 100+base, r.Intn(6))
	}
	if pick(0.05) {
		delete(a, kilov1alpha1.AnnotationKey)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a},
		Spec:       corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 10+base, r.Intn(8))},
	}
	if pick(0.05) {
		n.Spec.PodCIDR = fmt.Sprintf("10.%d.%d.0/24", 90, r.Intn(8))
	}
	if pick(0.3) {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR, fmt.Sprintf("fd%02x::%x00/120", 10+base, r.Intn(8))}
	}
	if pick(0.3) {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: fmt.Sprintf("198.51.100.%d", r.Intn(250))}}
	}
	return n
}

// shuffled returns in with every order that carries no meaning shuffled:
// clusters in the spec, map insertion order, and the order in which a
// snapshot's list holds the objects of a name it holds twice.
func shuffled(r *rand.Rand, in Input) Input {
	out := in
	out.Spec.Clusters = append([]meshv1alpha1.ClusterEntry(nil), in.Spec.Clusters...)
	r.Shuffle(len(out.Spec.Clusters), func(i, j int) {
		out.Spec.Clusters[i], out.Spec.Clusters[j] = out.Spec.Clusters[j], out.Spec.Clusters[i]
	})
	names := make([]string, 0, len(in.Clusters))
	for name := range in.Clusters {
		names = append(names, name)
	}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	out.Clusters = make(map[string]ClusterSnapshot, len(names))
	for _, name := range names {
		snap := in.Clusters[name]
		nodes := snap.Nodes.Slice()
		r.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		snap.Nodes = nodesOf(nodes...)
		peers := snap.Peers.Slice()
		r.Shuffle(len(peers), func(i, j int) { peers[i], peers[j] = peers[j], peers[i] })
		snap.Peers = heldPeers(peers...)
		out.Clusters[name] = snap
	}
	return out
}

func planBytes(t testing.TB, p *Plan) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(p.ServedView()); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(p.DesiredPeers); err != nil { // map keys are sorted by encoding/json
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPropertyInputOrderNeverChangesOutput(t *testing.T) {
	for seed := int64(0); seed < propertySeeds; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := randomMesh(r)
		want := planBytes(t, mustCompute(t, in))
		for k := 0; k < 3; k++ {
			if got := planBytes(t, mustCompute(t, shuffled(r, in))); !bytes.Equal(got, want) {
				t.Fatalf("seed %d, shuffle %d: output differs\n%s", seed, k, firstDifference(got, want))
			}
		}
	}
	in := testInput(t)
	want := planBytes(t, mustCompute(t, in))
	r := rand.New(rand.NewSource(1))
	for k := 0; k < 20; k++ {
		if got := planBytes(t, mustCompute(t, shuffled(r, in))); !bytes.Equal(got, want) {
			t.Fatalf("fixtures, shuffle %d: output differs\n%s", k, firstDifference(got, want))
		}
	}
}

func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(i-200, 0)
	return fmt.Sprintf("got  ...%s\nwant ...%s", a[from:min(i+200, len(a))], b[from:min(i+200, len(b))])
}

// Every Peer valid, no address in two Peers of one target, nothing of the
// target's own ranges, nothing outside its source's declared networks.
func TestPropertyPlansHoldTheInvariants(t *testing.T) {
	for seed := int64(0); seed < propertySeeds; seed++ {
		in := randomMesh(rand.New(rand.NewSource(seed)))
		p := mustCompute(t, in)
		ok := t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			checkPlanInvariants(t, in, p)
		})
		if !ok {
			return
		}
	}
}

// Applying a plan and planning again changes nothing on the reachable
// clusters: the reconciler converges in one step.
func TestPropertyApplyingAPlanConverges(t *testing.T) {
	for seed := int64(0); seed < propertySeeds; seed++ {
		in := randomMesh(rand.New(rand.NewSource(seed)))
		p1 := mustCompute(t, in)
		p2 := mustCompute(t, appliedInput(in, p1))
		for _, tp := range p2.View.Targets {
			if tp.DiffState != meshv1alpha1.DiffStateComputed {
				continue
			}
			if len(tp.Create)+len(tp.Update)+len(tp.Delete) > 0 {
				t.Fatalf("seed %d: %s does not converge: create %v update %v delete %v", seed, tp.Cluster, tp.Create, tp.Update, tp.Delete)
			}
		}
		if !bytes.Equal(peersBytes(t, p1), peersBytes(t, p2)) {
			t.Fatalf("seed %d: desired Peers changed after applying them", seed)
		}
	}
}

// appliedInput is in once the reconciler applied p to every reachable
// cluster.
func appliedInput(in Input, p *Plan) Input {
	next := in
	next.Clusters = map[string]ClusterSnapshot{}
	for name, snap := range in.Clusters {
		if snap.Reachable {
			snap.Peers = heldPeers(appliedPeers(&in, snap.Peers.Slice(), p.DesiredPeers[name].Slice())...)
		}
		next.Clusters[name] = snap
	}
	return next
}

// appliedPeers is what a target holds once the reconciler applied desired to
// it: the Peers the mesh does not manage, and copies of desired.
func appliedPeers(in *Input, held, desired []*kilov1alpha1.Peer) []*kilov1alpha1.Peer {
	var peers []*kilov1alpha1.Peer
	for _, e := range held {
		if !IsManagedBy(e, in.MeshNamespace, in.MeshName, in.MeshUID) {
			peers = append(peers, e)
		}
	}
	for _, d := range desired {
		peers = append(peers, d.DeepCopy())
	}
	return peers
}

func peersBytes(t testing.TB, p *Plan) []byte {
	b, err := json.Marshal(p.DesiredPeers)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The random meshes must actually reach the paths the properties are about.
func TestPropertyGeneratorCoverage(t *testing.T) {
	seen := map[string]bool{}
	for seed := int64(0); seed < propertySeeds; seed++ {
		p := mustCompute(t, randomMesh(rand.New(rand.NewSource(seed))))
		for _, i := range append(p.View.Conflicts, p.View.Warnings...) {
			seen[i.Reason] = true
		}
		for _, c := range p.View.Clusters {
			for _, d := range p.Nodes[c.Name].All() {
				seen[d.Reason] = true
			}
		}
		for _, path := range p.View.Paths {
			seen["path:"+string(path.Kind)] = true
		}
		if p.View.Relay != nil {
			for _, r := range p.View.Relay.Refused {
				seen["refused:"+r.Reason] = true
			}
		}
		for _, tp := range p.View.Targets {
			for _, k := range tp.Kept {
				seen["kept:"+k.Reason] = true
			}
			if len(tp.Update) > 0 {
				seen["update"] = true
			}
			if len(tp.Delete) > 0 {
				seen["delete"] = true
			}
		}
	}
	var missing []string
	for _, r := range []string{
		ReasonAdvertised, ReasonNotReady, ReasonPodCIDROutsideDeclared, ReasonDuplicatePodCIDR, ReasonMalformedEndpoint,
		ReasonNoEndpointNoKeepalive, ReasonWireGuardCIDRExhausted, ReasonCIDRClaimedTwice,
		ConflictNetworkOverlap, ConflictCIDRClaimedTwice, ConflictPublicKeyInUse, ConflictDuplicatePublicKey, ConflictNameTaken,
		ConflictCIDRClaimedByForeign, WarningClusterUnreachable, "kept:" + KeptSourceUnreachable, "update", "delete",
		ConflictNoRelay, "path:" + string(meshv1alpha1.PathRelayed), "refused:" + RelayRefusedBehindNAT, "refused:" + RelayRefusedCannotCarry,
	} {
		if !seen[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the generator never reaches %s", strings.Join(missing, ", "))
	}
}
