package admission

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// resolveTimeout bounds the name resolution of one member API server.
const resolveTimeout = 3 * time.Second

// Resolver looks a host name up; net.DefaultResolver in the server.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// checkServers refuses a mesh whose kubeconfigs name an API server at an
// address the server policy does not allow for its namespace, so that such
// a mesh is never stored and nothing is ever dialled for it. A name is
// resolved and every address checked; a name that does not resolve now is
// left to the member caches, which check every address they dial.
func (p *Plugin) checkServers(ctx context.Context, mesh *meshv1alpha1.ClusterMesh, servers []string, policy memberaccess.ServerPolicy) field.ErrorList {
	allowed := policy.AllowedServers(mesh.Namespace)
	var errs field.ErrorList
	for i, server := range servers {
		if server == "" {
			continue
		}
		ref := mesh.Spec.Clusters[i].KubeconfigSecretRef
		u, err := url.Parse(server)
		if err != nil {
			continue // ServerIdentity normalized it: cannot happen
		}
		addrs, err := p.addresses(ctx, u.Hostname())
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if err := memberaccess.CheckServerAddress(a, allowed); err != nil {
				msg := err.Error()
				if e := (*memberaccess.Error)(nil); errors.As(err, &e) {
					msg = e.Message
				}
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusters").Index(i).Child("kubeconfigSecretRef"), ref.Name,
					fmt.Sprintf("the kubeconfig's server %s may not be used: %s", server, msg)))
				break
			}
		}
	}
	return errs
}

// addresses are what host is dialled at: itself if it is an address, else
// what it resolves to.
func (p *Plugin) addresses(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	resolver := p.resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return resolver.LookupNetIP(ctx, "ip", host)
}
