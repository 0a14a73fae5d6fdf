package apiserver

import (
	"context"
	"net/netip"
	"slices"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// memberServers is where the API servers of a namespace's member clusters
// may be: the networks of --member-server-cidrs for every namespace, and
// the memberServers of the ClusterMeshGrants covering it. The member
// caches dial only there, and admission refuses kubeconfigs naming other
// servers.
type memberServers struct {
	flag   []netip.Prefix
	grants *grants.Index
}

var _ memberaccess.ServerPolicy = memberServers{}

func (p memberServers) AllowedServers(namespace string) []netip.Prefix {
	return append(slices.Clone(p.flag), p.grants.MemberServers(namespace)...)
}

// HasSynced: nothing is judged before the grants are read
// (memberaccess.PolicySynced).
func (p memberServers) HasSynced() bool { return p.grants.HasSynced() }

// followMemberServers applies the grants' changes to the member caches'
// connections, namespace by namespace, and their first reading to all.
func followMemberServers(generic *genericapiserver.GenericAPIServer, bg *background, index *grants.Index, members *clusters.Manager) error {
	index.AddChangeHandler(func(namespace string) { members.ServerPolicyChanged(namespace) })
	return bg.hook(generic, "kilo-mesh-member-servers", func(ctx context.Context) {
		if cache.WaitForCacheSync(ctx.Done(), index.HasSynced) {
			members.ServerPolicyChanged()
		}
	})
}
