package join

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

func printNetworks(w io.Writer, n Networks) {
	fmt.Fprintln(w, "Networks of the member (override with the flag shown):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, row := range []struct {
		field, flag string
		p           Proposal
	}{
		{"podCIDRs", "--pod-cidrs", n.PodCIDRs},
		{"serviceCIDR", "--service-cidr", n.ServiceCIDR},
		{"additionalCIDRs", "--additional-cidrs", n.AdditionalCIDRs},
		{"wireguardCIDR", "--wireguard-cidr", n.WireguardCIDR},
		{"nodeCIDRs", "--node-cidrs", n.NodeCIDRs},
	} {
		if row.field == "additionalCIDRs" && len(row.p.Values) == 0 {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", row.field, row.p, row.flag, row.p.Source)
	}
	tw.Flush()
}

// otherNetworks are the declared networks of the mesh's entries but name.
func otherNetworks(mesh *meshv1alpha1.ClusterMesh, name string) []netip.Prefix {
	if mesh == nil {
		return nil
	}
	var out []netip.Prefix
	for i := range mesh.Spec.Clusters {
		if mesh.Spec.Clusters[i].Name == name {
			continue
		}
		nets, _ := validation.ClusterNetworks(&mesh.Spec.Clusters[i], field.NewPath("spec"))
		for _, n := range nets {
			out = append(out, n.Prefix)
		}
	}
	return out
}

// keptSource is the source of a value kept from the mesh's entry.
const keptSource = "kept from the mesh's entry"

// proposeNetworks picks each network: the flag, else the existing entry's
// value, else what the member's objects suggest.
func (o *Options) proposeNetworks(ctx context.Context, kube kubernetes.Interface, entry *meshv1alpha1.ClusterEntry, others []netip.Prefix) (Networks, error) {
	var n Networks
	var nodes []corev1.Node
	listNodes := func() ([]corev1.Node, error) {
		if nodes != nil {
			return nodes, nil
		}
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the member's Nodes: %w", err)
		}
		nodes = list.Items
		return nodes, nil
	}
	var err error
	switch {
	case o.PodCIDRs != nil:
		n.PodCIDRs = Proposal{Values: o.PodCIDRs, Source: "given"}
	case entry != nil && len(entry.PodCIDRs) > 0:
		n.PodCIDRs = Proposal{Values: entry.PodCIDRs, Source: keptSource}
	default:
		var all []corev1.Node
		if all, err = listNodes(); err != nil {
			return n, err
		}
		if n.PodCIDRs, err = ProposePodCIDRs(all); err != nil {
			return n, err
		}
	}
	switch {
	case o.WireguardCIDR != nil:
		n.WireguardCIDR = Proposal{Values: []string{*o.WireguardCIDR}, Source: "given"}
	case entry != nil && entry.WireguardCIDR != "":
		n.WireguardCIDR = Proposal{Values: []string{entry.WireguardCIDR}, Source: keptSource}
	default:
		var all []corev1.Node
		if all, err = listNodes(); err != nil {
			return n, err
		}
		if n.WireguardCIDR, err = ProposeWireguardCIDR(all); err != nil {
			return n, err
		}
	}
	switch {
	case o.NodeCIDRs != nil:
		n.NodeCIDRs = Proposal{Values: o.NodeCIDRs, Source: "given"}
	case entry != nil && len(entry.NodeCIDRs) > 0:
		n.NodeCIDRs = Proposal{Values: entry.NodeCIDRs, Source: keptSource}
	default:
		var all []corev1.Node
		if all, err = listNodes(); err != nil {
			return n, err
		}
		n.NodeCIDRs = WithoutOverlaps(ProposeNodeCIDRs(all), others)
	}
	switch {
	case o.ServiceCIDR != nil || o.AdditionalCIDRs != nil:
		if o.ServiceCIDR != nil && *o.ServiceCIDR != "" {
			n.ServiceCIDR = Proposal{Values: []string{*o.ServiceCIDR}, Source: "given"}
		}
		n.AdditionalCIDRs = Proposal{Values: o.AdditionalCIDRs, Source: "given"}
	case entry != nil:
		if entry.ServiceCIDR != "" {
			n.ServiceCIDR = Proposal{Values: []string{entry.ServiceCIDR}, Source: keptSource}
		}
		n.AdditionalCIDRs = Proposal{Values: entry.AdditionalCIDRs, Source: keptSource}
	default:
		list, err := kube.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
		switch {
		case err == nil:
			n.ServiceCIDR, n.AdditionalCIDRs = ProposeServiceCIDRs(list.Items, true)
		case apierrors.IsNotFound(err):
			n.ServiceCIDR, n.AdditionalCIDRs = ProposeServiceCIDRs(nil, false)
		case apierrors.IsForbidden(err):
			n.ServiceCIDR = Proposal{Source: "you may not list the member's ServiceCIDRs; pass --service-cidr"}
		default:
			return n, fmt.Errorf("listing the member's ServiceCIDRs: %w", err)
		}
	}
	return n, nil
}

// admittedEntry builds the entry's apply patch and, unless the
// entry is up to date, asks the server with a dry run whether it takes it.
// A host network join proposed itself is optional: another mesh over the
// same cluster, or a grant, may hold it, so when the server refuses the
// entry with it, join asks again without it and says so.
func (o *Options) admittedEntry(ctx context.Context, api *cli.MeshAPI, mesh *meshv1alpha1.ClusterMesh, entry *meshv1alpha1.ClusterEntry,
	secretName, key string, nets *Networks, w io.Writer) (patch []byte, upToDate bool, err error) {
	for {
		entryMap := o.entry(entry, secretName, key, *nets)
		if patch, err = entryPatch(mesh, entryMap); err != nil {
			return nil, false, err
		}
		if upToDate, err = entryUpToDate(entry, entryMap); err != nil || upToDate {
			return patch, upToDate, err
		}
		err = preflightEntry(ctx, api, mesh, o.Name, patch)
		if err == nil || !nets.NodeCIDRs.proposed {
			return patch, false, err
		}
		fmt.Fprintf(w, "  nodeCIDRs %s left out: the server would not take them with the entry; pass --node-cidrs to insist\n", nets.NodeCIDRs)
		nets.NodeCIDRs = Proposal{Source: "left out"}
	}
}
