package join

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// memberName names every object of the member identity.
const memberName = member.Namespace

// identityDeleteCommand is how a user removes the member identity by hand.
func identityDeleteCommand() string {
	return fmt.Sprintf("kubectl delete clusterrolebinding/%s clusterrolebinding/%s clusterrole/%s clusterrole/%s namespace/%s --ignore-not-found (with your credentials on that cluster)",
		member.ServicesClusterRoleBinding, member.ClusterRoleBinding, member.ServicesClusterRole, member.ClusterRole, member.Namespace)
}

// deleteIdentity deletes the member identity join applied on the cluster
// cfg reaches, unless Peers of other meshes there show that the identity
// still serves them: then others says so and nothing is deleted. One
// identity serves every mesh that joined the cluster.
func deleteIdentity(ctx context.Context, cfg *rest.Config, ns, mesh string) (lines []string, others string, err error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	peers, err := dyn.Resource(kilov1alpha1.PeerResource).List(ctx, metav1.ListOptions{LabelSelector: planner.LabelManagedBy + "=" + planner.ManagedByValue})
	if err != nil {
		return nil, "", fmt.Errorf("listing the Peers on the leaving cluster: %w", err)
	}
	var meshes []string
	for _, p := range peers.Items {
		l := p.GetLabels()
		if l[planner.LabelMeshNamespace] == ns && l[planner.LabelMeshName] == mesh {
			continue
		}
		if m := l[planner.LabelMeshNamespace] + "/" + l[planner.LabelMeshName]; !slices.Contains(meshes, m) {
			meshes = append(meshes, m)
		}
	}
	if len(meshes) > 0 {
		sort.Strings(meshes)
		return nil, fmt.Sprintf("the cluster holds Peers of %d other mesh(es), %s, whose server may use it", len(meshes), strings.Join(meshes, ", ")), nil
	}
	// Its services rights too, whether or not join granted them.
	objs, err := identityObjects(true)
	if err != nil {
		return nil, "", err
	}
	// The reverse of the order they were applied in: the namespace last.
	for _, u := range slices.Backward(objs) {
		gvr := identityResources[u.GetKind()]
		err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lines = append(lines, fmt.Sprintf("%s/%s: not found", u.GetKind(), u.GetName()))
		case err != nil:
			return lines, "", fmt.Errorf("deleting %s %s on the leaving cluster: %w", u.GetKind(), u.GetName(), err)
		default:
			lines = append(lines, fmt.Sprintf("%s/%s: deleted", u.GetKind(), u.GetName()))
		}
	}
	return lines, "", nil
}
