package views

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// What `kubectl mesh why MESH KIND NAME` explains.
const (
	whyNode    = "node"
	whyService = "service"
)

const reasonValid = string(mcsv1beta1.ServiceExportReasonValid)

// reasonHelp says in a sentence what each stable reason of the services
// view means; the reasons themselves are what users match on.
var reasonHelp = map[string]string{
	services.LeftOutOutsidePodCIDRs:         "the address is not inside the exporting cluster's declared podCIDRs: Kilo would not route it, or would route it where it must not go, so it is never written anywhere",
	services.LeftOutInvalidAddress:          "the address does not parse, or is not of its EndpointSlice's address type",
	services.LeftOutUnsupportedAddressType:  "FQDN EndpointSlices are not carried",
	services.LeftOutNotReady:                "the endpoint is not ready",
	services.LeftOutDuplicateAddress:        "another endpoint of the export has the same address",
	services.BlockedNamespaceMissing:        "the namespace does not exist in the cluster, and namespaces are never created",
	services.BlockedImportNotOwned:          "a ServiceImport this mesh did not write has the name; it is left as it is, and nothing of the import is written there",
	services.BlockedDerivedServiceTaken:     "a Service this mesh did not write has the derived Service's name; it is left as it is, so the import gets no IP and no endpoints there",
	services.BlockedClusterShared:           "another mesh with multi-cluster services, created earlier, holds the cluster too, and a cluster belongs to one ClusterSet: this mesh writes and deletes nothing of its services there",
	services.BlockedHostNamespaceNotGranted: "the namespace is on the host cluster, where the server writes with its own identity, and neither may the mesh's author write there by hand nor does a ClusterMeshGrant name it in serviceNamespaces: nothing is exported from or imported into it",

	string(mcsv1beta1.ServiceExportReasonNoService):                     "there is no Service of that name in the exporting cluster",
	string(mcsv1beta1.ServiceExportReasonInvalidServiceType):            "a Service of type ExternalName cannot be exported",
	string(mcsv1beta1.ServiceExportReasonPortConflict):                  "a port has another number or protocol in another export: the import carries the union of the ports, a conflicting one as the oldest export has it",
	string(mcsv1beta1.ServiceExportReasonTypeConflict):                  "one export is headless and another has a cluster IP: the oldest export's type is used",
	string(mcsv1beta1.ServiceExportReasonSessionAffinityConflict):       "the session affinity differs between the exports: the oldest export's is used",
	string(mcsv1beta1.ServiceExportReasonSessionAffinityConfigConflict): "the session affinity timeout differs between the exports: the oldest export's is used",
	string(mcsv1beta1.ServiceExportReasonLabelsConflict):                "the exported labels differ between the exports: the oldest export's are used",
	string(mcsv1beta1.ServiceExportReasonAnnotationsConflict):           "the exported annotations differ between the exports: the oldest export's are used",
	string(mcsv1beta1.ServiceExportReasonInternalTrafficPolicyConflict): "the internal traffic policy differs between the exports: the oldest export's is used",
	string(mcsv1beta1.ServiceExportReasonTrafficDistributionConflict):   "the traffic distribution differs between the exports: the oldest export's is used",
	string(mcsv1beta1.ServiceExportReasonIPFamilyConflict):              "the IP families differ between the exports: the oldest export's are used",
}

// explain is a reason with its meaning.
func explain(reason string) string {
	if help, ok := reasonHelp[reason]; ok {
		return reason + ": " + help
	}
	return reason
}

// splitService reads NAMESPACE/NAME: a service lives in member clusters,
// so the mesh's namespace says nothing of it.
func splitService(s string) (string, string, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("a service is named NAMESPACE/NAME, as in the member clusters (e.g. shop/cart), not %q", s)
	}
	return ns, name, nil
}

// whyServiceData is what `why MESH service NS/NAME -o yaml|json` prints:
// every export of the service and its import in every cluster.
type whyServiceData struct {
	Namespace string                     `json:"namespace"`
	Name      string                     `json:"name"`
	Exports   []meshv1alpha1.ExportState `json:"exports"`
	Imports   []importOfCluster          `json:"imports,omitempty"`
}

type importOfCluster struct {
	Cluster   string `json:"cluster"`
	Reachable bool   `json:"reachable"`
	meshv1alpha1.ImportState
}

// WhyServiceData finds service (NAMESPACE/NAME) in the view, which is of
// cluster if not empty: its exports and its imports. A service no cluster
// exports is an error that says so.
func WhyServiceData(v *meshv1alpha1.ClusterMeshServices, service, cluster string) (*whyServiceData, error) {
	ns, name, err := splitService(service)
	if err != nil {
		return nil, err
	}
	out := &whyServiceData{Namespace: ns, Name: name}
	for _, e := range v.Exports {
		if e.Namespace == ns && e.Name == name {
			out.Exports = append(out.Exports, e)
		}
	}
	for _, c := range v.Clusters {
		for _, imp := range c.Imports {
			if imp.Namespace == ns && imp.Name == name {
				out.Imports = append(out.Imports, importOfCluster{Cluster: c.Cluster, Reachable: c.Reachable, ImportState: imp})
			}
		}
	}
	if len(out.Exports) == 0 && len(out.Imports) == 0 {
		where := "any member cluster of clustermesh " + v.Namespace + "/" + v.Name
		if cluster != "" {
			where = "cluster " + cluster
		}
		return nil, fmt.Errorf("no ServiceExport %s in %s: a service is carried only once a ServiceExport names it", service, where)
	}
	return out, nil
}

// RenderWhyService explains every export of a service, with each reason it
// was given, and what becomes of it in every cluster.
func RenderWhyService(w io.Writer, v *meshv1alpha1.ClusterMeshServices, service, cluster string) error {
	d, err := WhyServiceData(v, service, cluster)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Service %s/%s\n", d.Namespace, d.Name)
	if len(d.Exports) == 0 {
		fmt.Fprintln(w, "  no ServiceExport here: it is exported from other clusters")
	}
	for _, e := range d.Exports {
		if e.Valid != reasonValid {
			fmt.Fprintf(w, "  export of %s: not exported (%s)\n", e.Cluster, explain(e.Valid))
			continue
		}
		fmt.Fprintf(w, "  export of %s: exported (Valid), %d endpoints carried\n", e.Cluster, e.Endpoints)
		for _, rc := range e.LeftOut {
			fmt.Fprintf(w, "    %d endpoints left out, %s\n", rc.Count, explain(rc.Reason))
		}
		for _, c := range e.Conflicts {
			fmt.Fprintf(w, "    conflict %s\n", explain(c))
		}
		if e.Stale {
			fmt.Fprintf(w, "    %s is unreachable: its last known endpoints are kept, not dropped on a guess\n", e.Cluster)
		}
	}
	for i := range d.Imports {
		imp := &d.Imports[i]
		if imp.Blocked != "" {
			fmt.Fprintf(w, "  in %s: blocked (%s)\n", imp.Cluster, explain(imp.Blocked))
			if imp.Message != "" {
				fmt.Fprintf(w, "    %s\n", imp.Message)
			}
			continue
		}
		fmt.Fprintf(w, "  in %s: imports %s\n", imp.Cluster, importLine(&imp.ImportState))
		if !imp.Reachable {
			fmt.Fprintf(w, "    %s is unreachable: written once it answers\n", imp.Cluster)
		}
	}
	return nil
}

// runWhyService is `kubectl mesh why MESH service NS/NAME`.
func runWhyService(ctx context.Context, o *cli.Options, mesh, service, cluster, output string) error {
	if _, _, err := splitService(service); err != nil {
		return err
	}
	v, err := readServices(ctx, o, mesh, cluster)
	if err != nil {
		return err
	}
	if output != "" {
		d, err := WhyServiceData(v, service, cluster)
		if err != nil {
			return err
		}
		return cli.PrintData(o.Out, d, output)
	}
	return RenderWhyService(cli.Terminal(o.Out), v, service, cluster)
}

// serviceNames are the services of the view starting with prefix, as
// NAMESPACE/NAME, for completion.
func serviceNames(v *meshv1alpha1.ClusterMeshServices, prefix string) []string {
	var out []string
	for _, e := range v.Exports {
		if s := e.Namespace + "/" + e.Name; strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// completeWhyService completes the service of `why MESH service`.
func completeWhyService(o *cli.Options, mesh, cluster, prefix string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(context.Background(), cli.CompletionTimeout)
	defer cancel()
	v, err := readServices(ctx, o, mesh, cluster)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return serviceNames(v, prefix), cobra.ShellCompDirectiveNoFileComp
}
