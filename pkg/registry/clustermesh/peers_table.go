package clustermesh

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// peersColumns: one row per desired Peer, like kgctl showconf reads: on
// which cluster, for which group of which cluster, dialling where, routing
// what. -o wide adds what WireGuard itself is given.
var peersColumns = []metav1.TableColumnDefinition{
	{Name: "Target", Type: "string", Description: "Member cluster the Peer is applied on."},
	{Name: "Peer", Type: "string", Format: "name", Description: "Name of the Kilo Peer."},
	{Name: "Source", Type: "string", Description: "Member cluster the Peer represents."},
	{Name: "Group", Type: "string", Description: "Kilo group of the source cluster the Peer represents (location:NAME or node:NAME)."},
	{Name: "Endpoint", Type: "string", Description: "Where the target's leaders dial the group (host:port); <none> for a roaming group."},
	{Name: "Allowed IPs", Type: "string", Description: "Networks routed to the group; the first few, -o yaml lists all."},
	{Name: "Relays", Type: "string", Description: "Clusters behind NAT whose networks the Peer also carries: its group's leader forwards to them; <none> for a Peer of its own cluster's networks only."},
	{Name: "Keepalive", Type: "integer", Priority: 1, Description: "Persistent keepalive in seconds; 0 sends none."},
	{Name: "Public Key", Type: "string", Priority: 1, Description: "WireGuard public key of the group's leader."},
}

// ConvertToTable prints the desired Peers, of every member cluster or of
// the one ?cluster= names, as one row per Peer. The text formats
// (?format=wireguard, dot) have no table.
func (r *PeersREST) ConvertToTable(_ context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	objects := wantsObjects(opts)
	table := &metav1.Table{ColumnDefinitions: peersColumns}
	switch v := obj.(type) {
	case *meshv1alpha1.ClusterMeshPeers:
		for i := range v.Targets {
			t := &v.Targets[i]
			for j := range t.Peers {
				table.Rows = append(table.Rows, peerRow(&v.ObjectMeta, v, t.Cluster, &t.Peers[j], objects))
			}
		}
	case *peerList:
		shared := &meshv1alpha1.ClusterMeshPeers{ObjectMeta: metav1.ObjectMeta{Namespace: v.meshNamespace, Name: v.meshName}}
		for _, p := range v.plan.DesiredPeers[v.cluster].All() {
			table.Rows = append(table.Rows, peerRow(&shared.ObjectMeta, shared, v.cluster, p, objects))
		}
	case *textStream:
		return nil, apierrors.NewBadRequest("the wireguard and dot formats are text and have no table: read them with kubectl get --raw")
	default:
		return nil, fmt.Errorf("the peers view cannot print %T as a table", obj)
	}
	if table.Rows == nil {
		table.Rows = []metav1.TableRow{}
	}
	return table, nil
}

// peerRow is the row of one Peer on target. Its object is shared, or with
// objects the view restricted to that Peer.
func peerRow(mesh *metav1.ObjectMeta, shared runtime.Object, target string, p *kilov1alpha1.Peer, objects bool) metav1.TableRow {
	endpoint := planner.PeerEndpointString(p.Spec.Endpoint)
	if endpoint == "" {
		endpoint = cellNone
	}
	source, group := p.Labels[planner.LabelSourceCluster], p.Annotations[planner.AnnotationSourceGroup]
	if source == "" {
		source = cellUnknown
	}
	if group == "" {
		group = cellUnknown
	}
	relays := p.Annotations[planner.AnnotationRelays]
	if relays == "" {
		relays = cellNone
	}
	row := shared
	if objects {
		row = &meshv1alpha1.ClusterMeshPeers{
			TypeMeta:   metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMeshPeers"},
			ObjectMeta: *mesh,
			Targets:    []meshv1alpha1.TargetPeers{{Cluster: target, Peers: []kilov1alpha1.Peer{*p}}},
		}
	}
	return metav1.TableRow{
		Cells: []interface{}{
			target, p.Name, source, group, endpoint, fewItems(p.Spec.AllowedIPs), relays,
			int64(p.Spec.PersistentKeepalive), p.Spec.PublicKey,
		},
		Object: runtime.RawExtension{Object: row},
	}
}
