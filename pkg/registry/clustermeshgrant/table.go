package clustermeshgrant

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/tables"
)

// tableConvertor prints what an admin reviews: who is covered and which
// networks they may route through the host.
type tableConvertor struct{}

var _ rest.TableConvertor = tableConvertor{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the grant."},
	{Name: "Namespaces", Type: "string", Description: "Namespaces covered by name, and the selector covering others."},
	{Name: "Member Networks", Type: "string", Description: "Networks members may advertise into the host cluster."},
	{Name: "Local Networks", Type: "string", Description: "Networks of the host cluster that may be advertised to members."},
	{Name: "Age", Type: "date", Description: "Time since the grant was created."},
	{Name: "Member Servers", Type: "string", Priority: 1, Description: "Networks the members' API servers may resolve to."},
	{Name: "Host Peers", Type: "string", Priority: 1, Description: "The most Peers, and KiB of Peers, one covered mesh may put on the host."},
	{Name: "Service Namespaces", Type: "string", Priority: 1, Description: "Namespaces of the host covered meshes may export services from and import them into."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	return tables.Of(obj, columns, func(g *meshv1alpha1.ClusterMeshGrant, name, age string) []interface{} {
		return []interface{}{name, covered(&g.Spec), list(g.Spec.MemberNetworks), list(g.Spec.LocalNetworks), age, list(g.Spec.MemberServers), hostPeers(&g.Spec), list(g.Spec.ServiceNamespaces)}
	})
}

// covered renders namespaces and selector the way kubectl renders
// selectors elsewhere: "tenant-a,tenant-b" or "tenant-a + team=net".
func covered(s *meshv1alpha1.ClusterMeshGrantSpec) string {
	var parts []string
	if len(s.Namespaces) > 0 {
		parts = append(parts, strings.Join(s.Namespaces, ","))
	}
	if s.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.NamespaceSelector)
		switch {
		case err != nil:
			parts = append(parts, "<invalid selector>")
		case sel.Empty():
			parts = append(parts, "<all>")
		default:
			parts = append(parts, sel.String())
		}
	}
	return strings.Join(parts, " + ")
}

// hostPeers shows the limits in effect, defaults included, so an admin
// sees them without reading the API reference.
func hostPeers(s *meshv1alpha1.ClusterMeshGrantSpec) string {
	peers := ptr.Deref(s.MaxHostPeers, meshv1alpha1.DefaultMaxHostPeers)
	kib := ptr.Deref(s.MaxHostPeerKiB, meshv1alpha1.DefaultMaxHostPeerKiB)
	return fmt.Sprintf("%d (%d KiB)", peers, kib)
}

func list(s []string) string {
	if len(s) == 0 {
		return "<none>"
	}
	return strings.Join(s, ",")
}
