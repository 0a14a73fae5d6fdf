package join

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// identityTimeout bounds each read of a cluster's identity.
const identityTimeout = 15 * time.Second

// clusterChange says that an entry would reach another cluster than it
// does now: join refuses it unless --replace, because the mesh's Peers on
// the old cluster would stay there with nothing to manage them.
type clusterChange struct {
	oldServer, newServer string
	// why says how the two were told apart.
	why string
}

// detectChange compares the cluster the entry's kubeconfig reaches now
// (oldKubeconfig, from its Secret) with the one join is about to point it
// at. Clusters are the same when their identities (memberaccess.ReadIdentity:
// kube-system's UID and the verified CA) are equal; when either cannot be
// read (an expired token, an unreachable server), when their server URLs
// are equal, so that a credential can always be renewed. Nothing is
// compared when the Secret holds no kubeconfig the server would take: the
// entry reaches no cluster.
func detectChange(ctx context.Context, oldKubeconfig []byte, memberCfg *rest.Config, target Target) (*clusterChange, error) {
	if len(oldKubeconfig) == 0 {
		return nil, nil
	}
	oldCfg, err := memberaccess.ParseKubeconfig(oldKubeconfig, false)
	if err != nil {
		return nil, nil
	}
	newCfg, err := normalized(target, "probe")
	if err != nil {
		return nil, err
	}
	change := &clusterChange{oldServer: oldCfg.Host, newServer: newCfg.Host}
	oldID, oldErr := readIdentity(ctx, oldCfg)
	newID, newErr := readIdentity(ctx, memberCfg)
	switch {
	case oldErr == nil && newErr == nil:
		if oldID == newID {
			return nil, nil
		}
		change.why = "their kube-system namespaces or CAs differ"
		return change, nil
	case change.oldServer == change.newServer:
		return nil, nil
	case oldErr != nil:
		change.why = "the servers differ and the identity of the current one cannot be read: " + oldErr.Error()
	default:
		change.why = "the servers differ and the identity of the new one cannot be read: " + newErr.Error()
	}
	return change, nil
}

// readIdentity reads the identity of the cluster cfg reaches, with cfg's
// credentials.
func readIdentity(ctx context.Context, cfg *rest.Config) (string, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	// A member API server has no reason to redirect.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client.Timeout = identityTimeout
	id, e, _ := memberaccess.ReadIdentity(ctx, client, cfg.Host)
	if e != nil {
		return "", e
	}
	return id, nil
}

// refusal is the error of a refused repointing; it names the servers,
// never a credential. inPlace: the mesh has too few clusters to leave one.
func (c *clusterChange) refusal(ns, mesh, name string, inPlace bool) error {
	what := fmt.Sprintf("Run `kubectl mesh leave %s --name %s -n %s` first, or join with --replace, which does that leave and then this join", mesh, name, ns)
	if inPlace {
		what = "Join with --replace, which repoints the entry in place (a mesh of two clusters cannot lose one) and waits until the server has removed the mesh's Peers from " + c.oldServer
	}
	return fmt.Errorf("entry %s of clustermesh %s/%s reaches %s, and the member kubeconfig reaches another cluster, %s (%s): "+
		"repointing the entry would leave the mesh's Peers on %s with nothing to manage them; nothing was changed. %s",
		name, ns, mesh, c.oldServer, c.newServer, c.why, c.oldServer, what)
}
