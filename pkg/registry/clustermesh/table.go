package clustermesh

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/tables"
)

// tableConvertor prints what a platform engineer checks first: is the mesh
// ready, are the Peers in place, and how many nodes were left out.
type tableConvertor struct{}

var _ rest.TableConvertor = tableConvertor{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the mesh."},
	{Name: "Clusters", Type: "integer", Description: "Number of member clusters."},
	{Name: "Ready", Type: "string", Description: "Status of the Ready condition."},
	{Name: "Peers", Type: "string", Description: "Peers applied out of desired, over all clusters."},
	{Name: "Skipped", Type: "integer", Description: "Nodes left out of the mesh, over all clusters."},
	{Name: "Age", Type: "date", Description: "Time since the mesh was created."},
	{Name: "Local", Type: "string", Priority: 1, Description: "The cluster this server runs in."},
	{Name: "Reachable", Type: "string", Priority: 1, Description: "Reachable clusters out of all."},
	{Name: "Nodes", Type: "string", Priority: 1, Description: "Ready nodes out of all, over all clusters."},
	{Name: "Carried", Type: "string", Priority: 1, Description: "Status of the PeersCarried condition: False when conflicts keep groups or Peers out."},
	{Name: "Message", Type: "string", Priority: 1, Description: "Message of the Ready condition."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	return tables.Of(obj, columns, row)
}

func row(m *meshv1alpha1.ClusterMesh, name, age string) []interface{} {
	var applied, desired, skipped, reachable, ready, nodes int32
	for _, c := range m.Status.Clusters {
		applied += c.PeersApplied
		desired += c.PeersDesired
		skipped += c.SkippedNodes
		ready += c.ReadyNodes
		nodes += c.Nodes
		if c.Reachable {
			reachable++
		}
	}
	readyStatus, message := string(metav1.ConditionUnknown), ""
	if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionReady); c != nil {
		readyStatus, message = string(c.Status), c.Message
	}
	carried := string(metav1.ConditionUnknown)
	if c := meta.FindStatusCondition(m.Status.Conditions, meshv1alpha1.ConditionPeersCarried); c != nil {
		carried = string(c.Status)
	}
	local := "<none>"
	for _, c := range m.Spec.Clusters {
		if c.Local {
			local = c.Name
		}
	}
	return []interface{}{
		name,
		int64(len(m.Spec.Clusters)),
		readyStatus,
		fmt.Sprintf("%d/%d", applied, desired),
		int64(skipped),
		age,
		local,
		fmt.Sprintf("%d/%d", reachable, len(m.Spec.Clusters)),
		fmt.Sprintf("%d/%d", ready, nodes),
		carried,
		message,
	}
}
