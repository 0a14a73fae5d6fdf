package planner

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"net/netip"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// step is one change of a sequence, replayable from its seed.
type step struct {
	kind int
	seed int64
}

func (s step) String() string { return fmt.Sprintf("%s(%d)", stepKinds[s.kind].name, s.seed) }

// stepKinds are the changes a sequence draws from, weighted: what a member
// cluster, a user or the clock does to a mesh. Each returns a new Input and
// leaves the one it was given (and its objects) as they were.
var stepKinds = []struct {
	name   string
	weight int
	apply  func(r *rand.Rand, in Input) Input
}{
	{"key", 6, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			if r.Intn(5) == 0 {
				n.Annotations[kilov1alpha1.AnnotationKey] = randomKey(rand.New(rand.NewSource(int64(r.Intn(6))))) // a key another node may hold
			} else {
				n.Annotations[kilov1alpha1.AnnotationKey] = randomKey(r)
			}
		})
	}},
	{"endpoint", 6, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			switch r.Intn(4) {
			case 0:
				n.Annotations[kilov1alpha1.AnnotationEndpoint] = fmt.Sprintf("%s.%d:51820", []string{"203.0.113", "10.9.0", "198.51.100"}[r.Intn(3)], 1+r.Intn(250))
			case 1:
				n.Annotations[kilov1alpha1.AnnotationClusterMeshEndpoint] = []string{"-", "wg.example.com:51820", "bad", "192.0.2.7:51820", "127.0.0.1:51820"}[r.Intn(5)]
			case 2:
				delete(n.Annotations, kilov1alpha1.AnnotationClusterMeshEndpoint)
			default:
				n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: fmt.Sprintf("198.51.100.%d", r.Intn(250))}}
			}
		})
	}},
	{"keepalive", 2, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			if r.Intn(3) == 0 {
				delete(n.Annotations, kilov1alpha1.AnnotationPersistentKeepalive)
			} else {
				n.Annotations[kilov1alpha1.AnnotationPersistentKeepalive] = []string{"0", "10", "25", "x"}[r.Intn(4)]
			}
		})
	}},
	{"leader", 4, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			if _, ok := n.Annotations[kilov1alpha1.AnnotationLeader]; ok {
				delete(n.Annotations, kilov1alpha1.AnnotationLeader)
			} else {
				n.Annotations[kilov1alpha1.AnnotationLeader] = ""
			}
		})
	}},
	{"checkin", 8, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			n.Annotations[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(in.Now.Unix()-int64(r.Intn(10)), 10)
		})
	}},
	{"silent", 2, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			n.Annotations[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(in.Now.Unix()-int64(60+r.Intn(100)), 10)
		})
	}},
	{"location", 3, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			n.Annotations[kilov1alpha1.AnnotationLocation] = []string{"a", "b", "c", "d"}[r.Intn(4)]
		})
	}},
	{"label", 1, func(r *rand.Rand, in Input) Input {
		return editNode(r, in, func(n *corev1.Node) {
			n.Labels = map[string]string{"kilo.squat.ai/unrelated": strconv.Itoa(r.Intn(100))}
		})
	}},
	{"addnode", 2, func(r *rand.Rand, in Input) Input {
		name, snap := pickCluster(r, in)
		if name == "" {
			return in
		}
		c := slices.IndexFunc(in.Spec.Clusters, func(e meshv1alpha1.ClusterEntry) bool { return e.Name == name })
		n := randomNode(r, fmt.Sprintf("%s-x%d", name, r.Intn(1000)), c, testKeys(r))
		annotate(n, kilov1alpha1.AnnotationLastSeen, strconv.FormatInt(in.Now.Unix()-int64(r.Intn(20)), 10))
		snap.Nodes = snap.Nodes.With(n, nodeName) // a name already held is replaced, as in a cache
		return withSnapshot(in, name, snap)
	}},
	{"delnode", 2, func(r *rand.Rand, in Input) Input {
		name, snap := pickCluster(r, in)
		if name == "" || snap.Nodes.Len() == 0 {
			return in
		}
		snap.Nodes, _ = snap.Nodes.Without(snap.Nodes.Slice()[r.Intn(snap.Nodes.Len())].Name, nodeName)
		return withSnapshot(in, name, snap)
	}},
	{"tick", 10, func(r *rand.Rand, in Input) Input {
		in.Now = in.Now.Add(time.Duration(r.Intn(3000)) * time.Millisecond)
		return in
	}},
	{"wait", 2, func(r *rand.Rand, in Input) Input {
		in.Now = in.Now.Add(time.Duration(20+r.Intn(50)) * time.Second) // check-ins run out
		return in
	}},
	{"peeredit", 5, func(r *rand.Rand, in Input) Input {
		name, snap := pickCluster(r, in)
		if name == "" || snap.Peers.Len() == 0 {
			return in
		}
		p := snap.Peers.Slice()[r.Intn(snap.Peers.Len())].DeepCopy()
		switch r.Intn(5) {
		case 0:
			snap.Peers, _ = snap.Peers.Without(p.Name, peerName)
			return withSnapshot(in, name, snap)
		case 1:
			p.Spec.AllowedIPs = append(p.Spec.AllowedIPs, fmt.Sprintf("10.%d.9.0/24", 10+r.Intn(4)))
		case 2:
			p.Spec.Endpoint = &kilov1alpha1.PeerEndpoint{DNSOrIP: kilov1alpha1.DNSOrIP{IP: "192.0.2.1"}, Port: 51820}
		case 3:
			// A keepalive kg refuses: the Peer no longer counts for kg.
			p.Spec.PersistentKeepalive = -1
		default:
			p.ResourceVersion = strconv.Itoa(r.Intn(1000)) // an echo: nothing planned changes
		}
		snap.Peers = snap.Peers.With(p, peerName)
		return withSnapshot(in, name, snap)
	}},
	{"apply", 4, func(r *rand.Rand, in Input) Input {
		// The reconciler's pass on one target: its managed Peers become the plan's.
		name, snap := pickCluster(r, in)
		p, err := Compute(in)
		if name == "" || err != nil {
			return in
		}
		desired := p.DesiredPeers[name]
		for _, e := range snap.Peers.All() {
			if _, ok := desired.Get(e.Name, peerName); !ok && IsManagedBy(e, in.MeshNamespace, in.MeshName, in.MeshUID) {
				snap.Peers, _ = snap.Peers.Without(e.Name, peerName)
			}
		}
		for _, d := range desired.All() {
			snap.Peers = snap.Peers.With(d.DeepCopy(), peerName)
		}
		return withSnapshot(in, name, snap)
	}},
	{"foreign", 1, func(r *rand.Rand, in Input) Input {
		name, snap := pickCluster(r, in)
		if name == "" {
			return in
		}
		snap.Peers = snap.Peers.With(&kilov1alpha1.Peer{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", r.Intn(100))},
			Spec:       kilov1alpha1.PeerSpec{PublicKey: randomKey(r), AllowedIPs: []string{fmt.Sprintf("10.%d.%d.0/24", 10+r.Intn(4), r.Intn(8))}},
		}, peerName)
		return withSnapshot(in, name, snap)
	}},
	// The member cache lists everything again (its watch restarted): the
	// same objects in a list that shares nothing with the last one.
	{"relist", 1, func(r *rand.Rand, in Input) Input {
		name, snap := pickCluster(r, in)
		if name == "" {
			return in
		}
		snap.Nodes, snap.Peers = nodesOf(snap.Nodes.Slice()...), heldPeers(snap.Peers.Slice()...)
		return withSnapshot(in, name, snap)
	}},
	{"reach", 2, func(r *rand.Rand, in Input) Input {
		name := in.Spec.Clusters[r.Intn(len(in.Spec.Clusters))].Name
		snap := in.Clusters[name]
		snap.Reachable = !snap.Reachable
		snap.Error = map[bool]string{false: "unreachable"}[snap.Reachable]
		return withSnapshot(in, name, snap)
	}},
	{"grant", 2, func(r *rand.Rand, in Input) Input {
		in.Spec.Clusters = slices.Clone(in.Spec.Clusters)
		in.Spec.Clusters[0].Local = true
		switch r.Intn(4) {
		case 0:
			in.HostAccess = HostAccess{Mode: HostUnrestricted}
		case 1:
			in.HostAccess = HostAccess{Mode: HostDenied}
		default: // narrowing, down to nothing
			var member []netip.Prefix
			for b := 10; b < 14; b++ {
				if r.Intn(2) == 0 {
					member = append(member, netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/%d", b, 16+8*r.Intn(2))))
				}
			}
			in.HostAccess = HostAccess{Mode: HostBounded, MemberNetworks: member, LocalNetworks: []netip.Prefix{netip.MustParsePrefix("10.10.0.0/16")}, MaxPeers: r.Intn(2) * 3}
		}
		return in
	}},
	{"spec", 1, func(r *rand.Rand, in Input) Input {
		in.Spec.Clusters = slices.Clone(in.Spec.Clusters)
		c := &in.Spec.Clusters[r.Intn(len(in.Spec.Clusters))]
		c.PersistentKeepalive = int32(r.Intn(2) * 25)
		c.Granularity = []meshv1alpha1.Granularity{meshv1alpha1.GranularityLocation, meshv1alpha1.GranularityFull, ""}[r.Intn(3)]
		return in
	}},
	{"credential", 1, func(r *rand.Rand, in Input) Input {
		name := in.Spec.Clusters[r.Intn(len(in.Spec.Clusters))].Name
		snap := in.Clusters[name]
		snap.CredentialExpiry = in.Now.Add(CredentialRenewWithin + time.Duration(r.Intn(6))*time.Second)
		return withSnapshot(in, name, snap)
	}},
	// The entry's Secret replaced by another credential for the same cluster.
	{"connection", 1, func(r *rand.Rand, in Input) Input {
		name := in.Spec.Clusters[r.Intn(len(in.Spec.Clusters))].Name
		snap := in.Clusters[name]
		snap.Connection = fmt.Sprintf("connection-%d", r.Intn(3))
		return withSnapshot(in, name, snap)
	}},
}

func randomKey(r *rand.Rand) string {
	b := make([]byte, 32)
	r.Read(b)
	b[0] |= 1 // never the zero key
	return base64.StdEncoding.EncodeToString(b)
}

func testKeys(r *rand.Rand) []string {
	keys := make([]string, 4)
	for i := range keys {
		keys[i] = randomKey(r)
	}
	return keys
}

// pickCluster draws a cluster of the mesh with its snapshot; "" when the
// mesh has none.
func pickCluster(r *rand.Rand, in Input) (string, ClusterSnapshot) {
	if len(in.Spec.Clusters) == 0 {
		return "", ClusterSnapshot{}
	}
	name := in.Spec.Clusters[r.Intn(len(in.Spec.Clusters))].Name
	return name, in.Clusters[name]
}

// editNode replaces one node of a random cluster by an edited copy.
func editNode(r *rand.Rand, in Input, edit func(*corev1.Node)) Input {
	name, snap := pickCluster(r, in)
	if name == "" || snap.Nodes.Len() == 0 {
		return in
	}
	n := snap.Nodes.Slice()[r.Intn(snap.Nodes.Len())].DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	edit(n)
	snap.Nodes = snap.Nodes.With(n, nodeName)
	return withSnapshot(in, name, snap)
}

func withSnapshot(in Input, name string, snap ClusterSnapshot) Input {
	clusters := make(map[string]ClusterSnapshot, len(in.Clusters))
	for k, v := range in.Clusters {
		clusters[k] = v
	}
	clusters[name] = snap
	in.Clusters = clusters
	return in
}

// cachedSnapshot lists a snapshot's objects as a member cache does, one at a
// time with With, so that a name is held once (its first object).
func cachedSnapshot(snap ClusterSnapshot) ClusterSnapshot {
	snap.Nodes, snap.Peers = cachedList(snap.Nodes, nodeName), cachedList(snap.Peers, peerName)
	return snap
}

func cachedList[T any](l List[T], key func(T) string) List[T] {
	var out List[T]
	for _, v := range l.All() {
		if _, ok := out.Get(key(v), key); !ok {
			out = out.With(v, key)
		}
	}
	return out
}

// sequenceMesh is the first input of a sequence: randomMesh's meshes, full
// of conflicts, or a clean one where incremental planning applies most.
func sequenceMesh(r *rand.Rand) Input {
	var in Input
	if r.Intn(2) == 0 {
		in = randomMesh(r)
	} else {
		clusters, nodes := 2+r.Intn(3), 1+r.Intn(6)
		in = benchInput(clusters, nodes, []string{"location", "full"}[r.Intn(2)])
		in.Now = fixtureNow
		for _, snap := range in.Clusters {
			for k, n := range snap.Nodes.All() { // two locations, so that leaders can move
				n.Labels[meshv1alpha1.DefaultTopologyLabel] = fmt.Sprintf("zone-%d", k%2)
			}
		}
		if p, err := Compute(in); err == nil && r.Intn(4) > 0 {
			in = withPeers(in, p)
		}
	}
	if r.Intn(4) == 0 {
		in.Spec.Clusters = slices.Clone(in.Spec.Clusters)
		in.Spec.Clusters[0].Local = true
		in.HostAccess = HostAccess{Mode: HostUnrestricted}
	}
	if r.Intn(8) == 0 {
		return in // randomMesh's lists as drawn, which may hold a name twice, as no cache does
	}
	for name, snap := range in.Clusters {
		in.Clusters[name] = cachedSnapshot(snap)
	}
	return in
}

// drawSteps draws a sequence of n steps.
func drawSteps(r *rand.Rand, n int) []step {
	total := 0
	for _, k := range stepKinds {
		total += k.weight
	}
	steps := make([]step, n)
	for i := range steps {
		w := r.Intn(total)
		for k := range stepKinds {
			if w -= stepKinds[k].weight; w < 0 {
				steps[i] = step{kind: k, seed: r.Int63()}
				break
			}
		}
	}
	return steps
}
