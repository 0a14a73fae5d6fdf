package hollow

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Layout is how the Kilo nodes of a fleet are numbered and addressed:
// every member's pod and WireGuard networks apart from every other's, so
// that any members may share a mesh.
type Layout struct {
	Members int `json:"members"`
	Nodes   int `json:"nodes"`
	// NodesPerLocation nodes share a Kilo location; the first is its leader.
	NodesPerLocation int `json:"nodesPerLocation"`
	// Granularity is the kilo.squat.ai/granularity the nodes carry.
	Granularity string `json:"granularity"`
}

// podBits is the size of a node's pod network (/24, or smaller when a
// fleet would not fit 10.0.0.0/8), and memberBits of a member's.
func (l Layout) podBits() (node, member int) {
	perMember := bits.Len(uint(max(l.Nodes-1, 1)))
	for node = 8; node > 2; node-- {
		if l.Members<<(perMember+node) <= 1<<24 {
			break
		}
	}
	return node, perMember + node
}

// PodCIDR is member i's pod network, to declare in a mesh.
func (l Layout) PodCIDR(i int) string {
	_, mb := l.podBits()
	return offset(netip.MustParseAddr("10.0.0.0"), i<<mb).String() + "/" + strconv.Itoa(32-mb)
}

// WireGuardCIDR is member i's WireGuard network, within 100.64.0.0/10.
func (l Layout) WireGuardCIDR(i int) string {
	b := bits.Len(uint(max(l.Nodes, 4)))
	return offset(netip.MustParseAddr("100.64.0.0"), i<<b).String() + "/" + strconv.Itoa(32-b)
}

// NodeName is the name of node j of member i.
func NodeName(i, j int) string { return fmt.Sprintf("c%d-n%05d", i, j) }

// Location is the Kilo location of node j.
func (l Layout) Location(j int) string { return fmt.Sprintf("loc-%03d", j/l.NodesPerLocation) }

// Node is node j of member i as Kilo's agent leaves it, checked in at
// lastSeen.
func (l Layout) Node(i, j int, lastSeen time.Time) framework.KiloNode {
	nb, mb := l.podBits()
	g := i*l.Nodes + j
	return framework.KiloNode{
		Name:        NodeName(i, j),
		Location:    l.Location(j),
		Leader:      j%l.NodesPerLocation == 0,
		Endpoint:    offset(netip.MustParseAddr("198.18.0.0"), g%(1<<17)).String() + ":51820",
		InternalIP:  offset(netip.MustParseAddr("172.16.0.0"), g%(1<<20)).String() + "/12",
		PodCIDR:     offset(netip.MustParseAddr("10.0.0.0"), i<<mb+j<<nb).String() + "/" + strconv.Itoa(32-nb),
		Granularity: l.Granularity,
		// kube-controller-manager adds it to every Node; the benchmarks'
		// real clusters carry it from the start.
		Labels:   map[string]string{"beta.kubernetes.io/os": "linux"},
		LastSeen: lastSeen,
	}
}

func offset(a netip.Addr, n int) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Fleet is the hollow members of one process, seeded with a Layout's nodes.
type Fleet struct {
	Layout  Layout
	Members []*Member
	// Tokens are further tokens per member (Member.AddToken).
	Tokens [][]string
	// checkIns counts the check-ins written.
	checkIns atomic.Int64
}

// Counts are what a fleet's members answered so far.
type Counts struct {
	// Writes are the write requests of every member.
	Writes int64 `json:"writes"`
	// CheckIns are the check-ins of Kilo's stream written in the members.
	CheckIns int64 `json:"checkIns"`
}

// Counts reads the fleet's counters.
func (f *Fleet) Counts() Counts {
	c := Counts{CheckIns: f.checkIns.Load()}
	for _, m := range f.Members {
		c.Writes += m.Writes()
	}
	return c
}

// StartFleet starts l.Members members holding l.Nodes nodes each, with
// tokens extra tokens each.
func StartFleet(l Layout, tokens int) (*Fleet, error) {
	f := &Fleet{Layout: l}
	now := time.Now()
	for i := range l.Members {
		m, err := NewMember(fmt.Sprintf("hollow-%d", i))
		if err != nil {
			f.Close()
			return nil, err
		}
		f.Members = append(f.Members, m)
		var ts []string
		for range tokens {
			ts = append(ts, m.AddToken())
		}
		f.Tokens = append(f.Tokens, ts)
		for j := range l.Nodes {
			node, err := l.Node(i, j, now).Build()
			if err != nil {
				f.Close()
				return nil, err
			}
			if err := m.Seed(node); err != nil {
				f.Close()
				return nil, err
			}
		}
		m.store.compact()
	}
	return f, nil
}

// Close stops every member.
func (f *Fleet) Close() {
	for _, m := range f.Members {
		m.Close()
	}
}

// CheckIns runs Kilo's check-in stream until ctx ends: every node's
// last-seen written once per period, spread evenly over the period and the
// members, as each node's kg does. It is written in the member itself,
// not through its API: the stream is what the server sees, and what
// answering it costs a real kube-apiserver is not what is measured here.
func (f *Fleet) CheckIns(ctx context.Context, period time.Duration) {
	total := f.Layout.Members * f.Layout.Nodes
	if period <= 0 || total == 0 {
		return
	}
	start, done := time.Now(), 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due := int(now.Sub(start) * time.Duration(total) / period)
			stamp := strconv.FormatInt(now.Unix(), 10)
			f.checkIns.Add(int64(max(due-done, 0)))
			for ; done < due; done++ {
				i, j := done%f.Layout.Members, (done/f.Layout.Members)%f.Layout.Nodes
				f.Members[i].Mutate(nodes, "", NodeName(i, j), func(obj runtime.Object) {
					n := obj.(*corev1.Node)
					n.Annotations[kilov1alpha1.AnnotationLastSeen] = stamp
				})
			}
		}
	}
}

// ManifestMember is what a benchmark needs to reach one member.
type ManifestMember struct {
	Name      string   `json:"name"`
	Server    string   `json:"server"`
	CAPEM     []byte   `json:"caPEM"`
	Token     string   `json:"token"`
	Tokens    []string `json:"tokens,omitempty"`
	SystemUID string   `json:"systemUID"`
}

// Manifest describes a running fleet to another process.
type Manifest struct {
	Layout Layout `json:"layout"`
	Pid    int    `json:"pid"`
	// Control serves the fleet's Counts as JSON at /counts.
	Control string           `json:"control"`
	Members []ManifestMember `json:"members"`
}

// WriteManifest writes the fleet's manifest to path, whole or not at all.
func (f *Fleet) WriteManifest(path, control string) error {
	mf := Manifest{Layout: f.Layout, Pid: os.Getpid(), Control: control}
	for i, m := range f.Members {
		mm := m.manifest()
		mm.Tokens = f.Tokens[i]
		mf.Members = append(mf.Members, mm)
	}
	b, err := json.MarshalIndent(mf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// ReadManifest reads a manifest WriteManifest wrote.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var mf Manifest
	if err := json.Unmarshal(b, &mf); err != nil {
		return nil, fmt.Errorf("reading the hollow members' manifest %s: %w", path, err)
	}
	return &mf, nil
}
