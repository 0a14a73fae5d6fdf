package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// In a mesh of two clusters an entry cannot leave (a mesh keeps two), so
// --replace repoints it in place: join writes the new cluster's kubeconfig
// into the entry's Secret and the new cluster's networks into the entry,
// which the server treats as the old cluster's departure; join then waits
// until the old cluster holds none of the mesh's Peers.

// inPlace is an entry join repoints without a leave.
type inPlace struct {
	change *clusterChange
	// oldKubeconfig is what the entry's Secret held: join reads through it
	// whether the old cluster still holds the mesh's Peers.
	oldKubeconfig []byte
}

// atFewestClusters reports whether mesh has the fewest clusters it may
// have: none can leave, and --replace repoints an entry in place.
func atFewestClusters(mesh *meshv1alpha1.ClusterMesh) bool {
	return len(mesh.Spec.Clusters) <= validation.MinClusters
}

func (p *inPlace) announce(w io.Writer, name string) {
	fmt.Fprintf(w, "--replace: entry %s reaches %s, the member kubeconfig %s (%s). The mesh has %d clusters, the fewest it may have, "+
		"so the entry cannot leave first: it is repointed in place, and the server removes the mesh's Peers from %s once it reads the new Secret.\n\n",
		name, p.change.oldServer, p.change.newServer, p.change.why, validation.MinClusters, p.change.oldServer)
}

// wait waits until the server has repointed the entry: the status of
// generation (or later) has no departure of the entry left, and the old
// cluster holds no Peer of the mesh (count, see oldPeers). When the old
// cluster cannot be read, the departure is waited for to come and go. A
// departure the server gave up on is an error.
func (p *inPlace) wait(ctx context.Context, w io.Writer, get func(context.Context) (*meshv1alpha1.ClusterMesh, error),
	count func(context.Context) (int, error), name string, generation int64, timeout time.Duration) error {
	sawItem := false
	status, err := cli.Poll(ctx, w, fmt.Sprintf("waiting for %s to leave %s", name, p.change.oldServer), fmt.Sprintf("generation %d not observed yet", generation),
		leaveInterval, timeout, func(ctx context.Context) (bool, string, error) {
			m, err := get(ctx)
			if err != nil {
				return false, "reading the mesh: " + err.Error(), nil
			}
			d := departureIn(m, name, generation)
			sawItem = sawItem || d.removing
			if !d.gone {
				return false, d.status, d.err
			}
			n, err := count(ctx)
			switch {
			case err == nil && n == 0:
				return true, "", nil
			case err == nil:
				return false, fmt.Sprintf("%s still holds %d Peers of the mesh", p.change.oldServer, n), nil
			case sawItem:
				// Unreadable here, but the server's departure came and went.
				return true, "", nil
			}
			return false, fmt.Sprintf("waiting for the server to take up the departure (%s cannot be read with the old credential: %v)", p.change.oldServer, err), nil
		})
	if errors.Is(err, cli.ErrTimedOut) {
		return fmt.Errorf("the server has not finished removing the mesh's Peers from %s after %s: %s", p.change.oldServer, timeout, status)
	}
	return err
}

// oldPeers returns how to count the mesh's Peers on the old cluster with
// the old kubeconfig, checked as the server checks a tenant's.
func (p *inPlace) oldPeers(uid string) func(context.Context) (int, error) {
	cfg, err := memberaccess.ParseKubeconfig(p.oldKubeconfig, false)
	var c *cli.Clients
	if err == nil {
		cfg.Timeout = identityTimeout
		c, err = cli.NewClients(cfg)
	}
	return func(ctx context.Context) (int, error) {
		if err != nil {
			return 0, err
		}
		list, err := c.Dynamic.Resource(kilov1alpha1.PeerResource).List(ctx, metav1.ListOptions{LabelSelector: planner.LabelMeshUID + "=" + uid})
		if err != nil {
			return 0, err
		}
		return len(list.Items), nil
	}
}

// done says what became of the old cluster.
func (p *inPlace) done(w io.Writer, ns, mesh string) {
	fmt.Fprintf(w, "The server removed the Peers of clustermesh %s/%s from %s.\n", ns, mesh, p.change.oldServer)
	fmt.Fprintf(w, "Member identity on %s: kept (join has no credentials for that cluster). To remove it once no mesh uses the cluster: %s\n",
		p.change.oldServer, identityDeleteCommand())
}
