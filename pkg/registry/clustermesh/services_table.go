package clustermesh

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Kinds of the rows of the services table.
const (
	rowImport = "Import"
	rowExport = "Export"
)

// Status of an import written as planned, and of a valid export without conflict.
const (
	statusImported = "Imported"
	statusExported = "Exported"
)

// servicesColumns: one row per ServiceImport of every cluster, then one
// per ServiceExport, so that one table answers both "what does this cluster
// import" and "how did my export fare"; those the view only counts get one
// row per cluster and reason, without a Service. Cells that do not apply to a row's
// kind are <none>, as kubectl writes a missing value, so that every row has
// every cell.
var servicesColumns = []metav1.TableColumnDefinition{
	{Name: "Cluster", Type: "string", Description: "Member cluster: the importing one for an Import, the exporting one for an Export."},
	{Name: "Kind", Type: "string", Description: "Import (a ServiceImport the cluster holds) or Export (a ServiceExport of the cluster)."},
	{Name: "Service", Type: "string", Description: "Namespace and name of the service."},
	{Name: "Type", Type: "string", Description: "Type of the import: ClusterSetIP or Headless."},
	{Name: "Ports", Type: "string", Description: "Ports of the import, the union of the exported Services' (name:port/protocol)."},
	{Name: "IPs", Type: "string", Description: "ClusterSetIPs of the import in this cluster (the derived Service's clusterIPs)."},
	{Name: "Sources", Type: "string", Description: "Clusters whose endpoints the import carries."},
	{Name: "Endpoints", Type: "integer", Description: "Ready endpoints written for the import, or carried of the export."},
	{Name: "Status", Type: "string", Description: "Imported, or the reason the import is blocked; Exported, the export's Valid reason when it is not Valid, or its Conflict reasons."},
	{Name: "Left Out", Type: "string", Description: "Endpoints of the export left out, by reason (reason=count)."},
	{Name: "Reachable", Type: "boolean", Priority: 1, Description: "Whether the cluster answered; if not, an import is what it will hold and an export's last known endpoints are kept."},
	{Name: "Derived Service", Type: "string", Priority: 1, Description: "Selector-less Service carrying a ClusterSetIP import in this cluster."},
	{Name: "Message", Type: "string", Priority: 1, Description: "Why the import is blocked, or how many imports or exports are not shown."},
}

// ConvertToTable prints a services view as one row per import, then one
// per export.
func (r *ServicesREST) ConvertToTable(_ context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	v, ok := obj.(*meshv1alpha1.ClusterMeshServices)
	if !ok {
		return nil, fmt.Errorf("the services view cannot print %T as a table", obj)
	}
	objects := wantsObjects(opts)
	table := &metav1.Table{ColumnDefinitions: servicesColumns, Rows: []metav1.TableRow{}}
	for _, c := range v.Clusters {
		for _, imp := range c.Imports {
			var row runtime.Object = v
			if objects {
				row = servicesOf(v, []meshv1alpha1.ClusterImports{{Cluster: c.Cluster, Reachable: c.Reachable, Imports: []meshv1alpha1.ImportState{imp}}}, nil)
			}
			table.Rows = append(table.Rows, metav1.TableRow{Cells: importCells(c, &imp), Object: runtime.RawExtension{Object: row}})
		}
		table.Rows = append(table.Rows, hiddenRows(v, c, rowImport, c.HiddenImports, objects)...)
	}
	for _, e := range v.Exports {
		var row runtime.Object = v
		if objects {
			row = servicesOf(v, nil, []meshv1alpha1.ExportState{e})
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: exportCells(&e), Object: runtime.RawExtension{Object: row}})
	}
	for _, c := range v.Clusters {
		table.Rows = append(table.Rows, hiddenRows(v, c, rowExport, c.HiddenExports, objects)...)
	}
	return table, nil
}

// hiddenRows are one row per reason of the imports or exports of a cluster
// that the view counts without naming them.
func hiddenRows(v *meshv1alpha1.ClusterMeshServices, c meshv1alpha1.ClusterImports, kind string, hidden []meshv1alpha1.ReasonCount, objects bool) []metav1.TableRow {
	var rows []metav1.TableRow
	for _, rc := range hidden {
		var row runtime.Object = v
		if objects {
			only := meshv1alpha1.ClusterImports{Cluster: c.Cluster, Reachable: c.Reachable}
			if kind == rowImport {
				only.HiddenImports = []meshv1alpha1.ReasonCount{rc}
			} else {
				only.HiddenExports = []meshv1alpha1.ReasonCount{rc}
			}
			row = servicesOf(v, []meshv1alpha1.ClusterImports{only}, nil)
		}
		message := fmt.Sprintf("%d not shown: in namespaces of this cluster the mesh may not use", rc.Count)
		rows = append(rows, metav1.TableRow{Cells: []interface{}{
			c.Cluster, kind, cellNone, cellNone, cellNone, cellNone, cellNone, int64(0), rc.Reason, cellNone, c.Reachable, cellNone, message,
		}, Object: runtime.RawExtension{Object: row}})
	}
	return rows
}

func importCells(c meshv1alpha1.ClusterImports, imp *meshv1alpha1.ImportState) []interface{} {
	status, message, derived := statusImported, cellNone, imp.DerivedService
	if imp.Blocked != "" {
		status = imp.Blocked
	}
	if imp.Message != "" {
		message = imp.Message
	}
	if derived == "" {
		derived = cellNone
	}
	ports := make([]string, 0, len(imp.Ports))
	for _, p := range imp.Ports {
		ports = append(ports, portString(p))
	}
	return []interface{}{
		c.Cluster, rowImport, imp.Namespace + "/" + imp.Name, imp.Type, fewItems(ports), fewItems(imp.IPs),
		fewItems(imp.SourceClusters), int64(imp.Endpoints), status, cellNone, c.Reachable, derived, message,
	}
}

func exportCells(e *meshv1alpha1.ExportState) []interface{} {
	status := statusExported
	switch {
	case e.Valid != string(mcsv1beta1.ServiceExportReasonValid):
		status = e.Valid
	case len(e.Conflicts) > 0:
		status = strings.Join(e.Conflicts, ",")
	}
	leftOut := make([]string, 0, len(e.LeftOut))
	for _, rc := range e.LeftOut {
		leftOut = append(leftOut, fmt.Sprintf("%s=%d", rc.Reason, rc.Count))
	}
	return []interface{}{
		e.Cluster, rowExport, e.Namespace + "/" + e.Name, cellNone, cellNone, cellNone, cellNone, int64(e.Endpoints), status,
		fewItems(leftOut), !e.Stale, cellNone, cellNone,
	}
}

// portString writes a port as kubectl writes a Service's, named if it is.
func portString(p meshv1alpha1.ImportPort) string {
	s := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
	if p.Name != "" {
		s = p.Name + ":" + s
	}
	return s
}

// servicesOf is the view restricted to some imports and exports, for the
// row that shows them.
func servicesOf(v *meshv1alpha1.ClusterMeshServices, clusters []meshv1alpha1.ClusterImports, exports []meshv1alpha1.ExportState) *meshv1alpha1.ClusterMeshServices {
	return &meshv1alpha1.ClusterMeshServices{TypeMeta: v.TypeMeta, ObjectMeta: v.ObjectMeta, GeneratedAt: v.GeneratedAt, Clusters: clusters, Exports: exports}
}
