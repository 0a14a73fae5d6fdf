package planner

import (
	"bytes"
	"fmt"
	"math/rand"
	"net/netip"
	"strconv"
	"testing"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// relayMesh is randomMesh with most clusters behind NAT, a relay named now
// and then, and sometimes a local cluster whose access is bounded: every
// pair of clusters takes one of the three paths.
func relayMesh(r *rand.Rand) Input {
	in := randomMesh(r)
	for i := range in.Spec.Clusters {
		in.Spec.Clusters[i].BehindNAT = r.Float64() < 0.6
	}
	in.Spec.RelayCluster = ""
	if r.Float64() < 0.3 {
		in.Spec.RelayCluster = in.Spec.Clusters[r.Intn(len(in.Spec.Clusters))].Name
	}
	if r.Float64() < 0.4 {
		c := &in.Spec.Clusters[r.Intn(len(in.Spec.Clusters))]
		c.Local, c.KubeconfigSecretRef = true, nil
		in.HostAccess = randomHostAccess(r)
	}
	return in
}

// TestPropertyRelay: for every pair of clusters of a random mesh with
// random reachability, exactly one path, direct where possible, at most one
// relay hop, no address on two Peers of one target (checkPlanInvariants);
// the same input in any order plans the same; applying the plan converges.
func TestPropertyRelay(t *testing.T) {
	for seed := int64(0); seed < 3*propertySeeds; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := relayMesh(r)
		p := mustCompute(t, in)
		ok := t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			checkPlanInvariants(t, in, p)
			if got, want := planBytes(t, mustCompute(t, shuffled(r, in))), planBytes(t, p); !bytes.Equal(got, want) {
				t.Fatalf("output depends on input order\n%s", firstDifference(got, want))
			}
			next := appliedInput(in, p)
			p2 := mustCompute(t, next)
			checkPlanInvariants(t, next, p2)
			for _, tp := range p2.View.Targets {
				if len(tp.Create)+len(tp.Update)+len(tp.Delete) > 0 {
					t.Errorf("relay %+v, paths %+v", p.View.Relay, p.View.Paths)
					t.Errorf("then relay %+v, paths %+v", p2.View.Relay, p2.View.Paths)
					for _, u := range tp.Update {
						t.Errorf("was %+v", findPeer(p.DesiredPeers[tp.Cluster], u.Name))
						t.Errorf("now %+v", findPeer(p2.DesiredPeers[tp.Cluster], u.Name))
					}
					t.Fatalf("%s does not converge: create %v update %v delete %v", tp.Cluster, tp.Create, tp.Update, tp.Delete)
				}
			}
		})
		if !ok {
			return
		}
	}
}

// randomHostAccess is any access to the local cluster: unrestricted,
// bounded to some of the random meshes' networks (with a Peer limit now and
// then), or denied.
func randomHostAccess(r *rand.Rand) HostAccess {
	switch r.Intn(3) {
	case 0:
		return HostAccess{Mode: HostUnrestricted}
	case 1:
		ha := HostAccess{Mode: HostBounded}
		for i := 10; i < 15; i++ {
			if r.Float64() < 0.6 {
				ha.MemberNetworks = append(ha.MemberNetworks, netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", i)))
			}
			if r.Float64() < 0.6 {
				ha.LocalNetworks = append(ha.LocalNetworks, netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", i)))
			}
		}
		if r.Float64() < 0.3 {
			ha.MaxPeers = 1 + r.Intn(4)
		}
		return ha
	}
	return HostAccess{Mode: HostDenied}
}

func findPeer(l PeerList, name string) *kilov1alpha1.Peer {
	for _, p := range l.All() {
		if p.Name == name {
			return p
		}
	}
	return nil
}
