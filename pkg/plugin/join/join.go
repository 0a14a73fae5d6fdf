// Package join is `kubectl mesh join`: it makes a cluster a member of a
// mesh in one command. On the member it applies the least-privileged
// identity of pkg/member and mints a token for it; on the host it writes a
// self-contained kubeconfig Secret and the mesh entry with the member's
// networks. It never copies the caller's own credentials. `kubectl mesh
// leave`, its reverse, lives here too: it removes what join wrote, and join
// --replace runs it.
package join

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// Options of `kubectl mesh join`.
type Options struct {
	*cli.Options

	Mesh             string
	Name             string
	MemberKubeconfig string
	MemberContext    string
	// MemberServer replaces the member's URL in the Secret's kubeconfig,
	// for when the mesh server reaches the member at another address.
	MemberServer string
	SecretName   string
	TokenExpiry  time.Duration
	Refresh      bool
	DryRun       bool
	// Replace lets join move an entry to another cluster: a leave, then
	// the join.
	Replace bool
	// Services grants (true) or withholds (false) the member identity's
	// services rights; nil: as the mesh's spec.multiClusterServices says.
	Services *bool

	// Overrides of the proposed networks; nil when not given.
	PodCIDRs        []string
	ServiceCIDR     *string
	AdditionalCIDRs []string
	WireguardCIDR   *string
	// Optional entry fields, set only when given.
	NodeCIDRs           []string
	WireguardPort       *int32
	PersistentKeepalive *int32
	Granularity         *string
	BehindNAT           *bool

	now func() time.Time
}

// NewCommand is `kubectl mesh join MESH --name NAME --member-kubeconfig FILE`.
func NewCommand(o *cli.Options) *cobra.Command {
	opts := &Options{Options: o, now: time.Now}
	var podCIDRs, additional, nodeCIDRs []string
	var serviceCIDR, wireguardCIDR, granularity string
	var port, keepalive int32
	var behindNAT, services bool
	cmd := &cobra.Command{
		Use:   "join MESH --name NAME --member-kubeconfig FILE [--member-context CTX]",
		Short: "Make a cluster a member of a mesh, in one command",
		Long: fmt.Sprintf(`Join a cluster into a ClusterMesh of the host cluster:

  1. on the member (with your credentials there): server-side apply the
     least-privileged member identity (namespace, ServiceAccount, ClusterRole
     and binding of artifacts/member) and, for multi-cluster services, its
     services rights (a second ClusterRole and binding,
     artifacts/components/member-services); mint a token for it (TokenRequest);
  2. on the host: write a self-contained kubeconfig (https server, CA data,
     that token) into a Secret in the mesh's namespace;
  3. propose the member's networks (pod CIDRs from its Nodes, the service CIDR
     from its ServiceCIDR objects, the Kilo subnet from its leaders'
     kilo.squat.ai/wireguard-ip), show them, and add the entry to the mesh
     with server-side apply.

An entry that reaches another cluster (its kube-system UID or CA differ, or its
server differs and either identity cannot be read) is not repointed: join
fails naming both servers, unless --replace, which makes the entry leave first
(as kubectl mesh leave, without deleting the old cluster's member identity)
and then joins. A mesh of two clusters cannot lose one: there --replace
repoints the entry in place (the new cluster's kubeconfig in its Secret, its
networks in the entry), which the server takes as the old cluster's departure,
and waits until the old cluster holds none of the mesh's Peers (exit 2 when
the server has not finished within 5m or gave up).

The base rights are always applied:
  %s.
The services rights, cluster-wide:
  %s,
are granted when the mesh has spec.multiClusterServices Enabled, else not: the
default is the least the mesh needs. --services grants them anyway (say, before
enabling services), --services=false never. They are never taken away, as
another mesh may use them on the cluster: an existing services role is applied
again (or left alone under --services=false), and services rights that an
earlier version's single role held are carried over into it unless
--services=false. A mesh with services whose member lacks them reports the
cluster's services as ServicesForbidden, writes and deletes nothing there,
and names this command with --services to fix it.

It does not install the Multi-Cluster Services CRDs (ServiceExport,
ServiceImport: cluster-wide, possibly shared with another implementation); a
mesh with spec.multiClusterServices Enabled needs them on every member:
kubectl apply -k artifacts/member, or the kilo-mesh-member chart.

Your own credentials are never copied anywhere. Rerunning it changes nothing
while the token is valid for more than 30 days; --refresh renews it.
--dry-run prints every object it would write (tokens redacted) and writes
nothing (the server checks each write with a dry run).`, member.InWords(member.BaseRights()), member.InWords(member.ServicesRights())),
		Example: `  kubectl mesh join demo --name north --member-kubeconfig north.yaml
  kubectl mesh join demo --name north --member-kubeconfig ~/.kube/config --member-context north-admin --dry-run
  kubectl mesh join demo --name north --member-kubeconfig north.yaml --refresh
  kubectl mesh join demo --name north --member-kubeconfig north.yaml --services`,
		Args:              cli.MeshArgs,
		ValidArgsFunction: o.CompleteMeshes,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Mesh = args[0]
			f := cmd.Flags()
			if f.Changed("pod-cidrs") {
				opts.PodCIDRs = podCIDRs
			}
			if f.Changed("service-cidr") {
				opts.ServiceCIDR = &serviceCIDR
			}
			if f.Changed("additional-cidrs") {
				opts.AdditionalCIDRs = additional
			}
			if f.Changed("wireguard-cidr") {
				opts.WireguardCIDR = &wireguardCIDR
			}
			if f.Changed("node-cidrs") {
				opts.NodeCIDRs = nodeCIDRs
			}
			if f.Changed("wireguard-port") {
				opts.WireguardPort = &port
			}
			if f.Changed("persistent-keepalive") {
				opts.PersistentKeepalive = &keepalive
			}
			if f.Changed("granularity") {
				opts.Granularity = &granularity
			}
			if f.Changed("behind-nat") {
				opts.BehindNAT = &behindNAT
			}
			if f.Changed("services") {
				opts.Services = &services
			}
			if err := opts.validate(); err != nil {
				return err
			}
			return opts.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Name, "name", "", "name of the cluster in the mesh (a DNS-1123 label); required")
	f.StringVar(&opts.MemberKubeconfig, "member-kubeconfig", "", "kubeconfig file for the member cluster, with rights to create RBAC objects and tokens there; required")
	f.StringVar(&opts.MemberContext, "member-context", "", "context of --member-kubeconfig (default: its current context)")
	f.StringVar(&opts.MemberServer, "member-server", "", "https URL the mesh server reaches the member at (default: the server of --member-kubeconfig)")
	f.StringVar(&opts.SecretName, "secret-name", "", "Secret for the member's kubeconfig (default: the entry's, else NAME-kubeconfig)")
	f.DurationVar(&opts.TokenExpiry, "token-expiry", DefaultTokenValidity, "validity of a new token (the member cluster may grant less)")
	f.BoolVar(&opts.Refresh, "refresh", false, "mint a new token even if the current one is valid for more than 30 days")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print every object that would be written, write nothing")
	f.BoolVar(&opts.Replace, "replace", false, "when the entry reaches another cluster: leave it first (kubectl mesh leave), then join; in a mesh of two, repoint it in place")
	f.BoolVar(&services, "services", false, "grant the member identity its services rights (default: when the mesh has multi-cluster services Enabled); =false never")
	f.StringSliceVar(&podCIDRs, "pod-cidrs", nil, "pod networks of the member (default: proposed from its Nodes)")
	f.StringVar(&serviceCIDR, "service-cidr", "", `service network of the member (default: from its ServiceCIDR objects; "" for none)`)
	f.StringSliceVar(&additional, "additional-cidrs", nil, "further networks of the member (default: further ServiceCIDRs)")
	f.StringVar(&wireguardCIDR, "wireguard-cidr", "", "Kilo --subnet of the member (default: from its leaders' kilo.squat.ai/wireguard-ip)")
	f.StringSliceVar(&nodeCIDRs, "node-cidrs", nil, "host networks of the member's nodes whose internal IPs are advertised")
	f.Int32Var(&port, "wireguard-port", 0, "WireGuard port of Kilo on the member's nodes (server default 51820)")
	f.Int32Var(&keepalive, "persistent-keepalive", 0, "keepalive in seconds for the member's Peers elsewhere (for a member behind NAT)")
	f.StringVar(&granularity, "granularity", "", "Kilo granularity of the member: Auto, Location, Full or Cross (server default Auto)")
	f.BoolVar(&behindNAT, "behind-nat", false, "no other cluster can dial the member's nodes (NAT, outbound only): its Peers elsewhere wait for its keepalives, and another cluster behind NAT reaches it through the mesh's relay")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("member-kubeconfig")
	_ = cmd.MarkFlagFilename("member-kubeconfig")
	_ = cmd.RegisterFlagCompletionFunc("member-context", opts.completeMemberContexts)
	_ = cmd.RegisterFlagCompletionFunc("granularity", cli.FixedCompletion("Auto", "Location", "Full", "Cross"))
	return cmd
}

func (o *Options) validate() error {
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return fmt.Errorf("--name %q: %s", o.Name, errs[0])
	}
	if o.TokenExpiry < 10*time.Minute {
		return fmt.Errorf("--token-expiry must be at least 10m (the shortest token Kubernetes issues)")
	}
	cidrs := slices.Concat(o.PodCIDRs, o.AdditionalCIDRs, o.NodeCIDRs)
	for _, c := range []*string{o.ServiceCIDR, o.WireguardCIDR} {
		if c != nil && *c != "" {
			cidrs = append(cidrs, *c)
		}
	}
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("%q is not a CIDR", c)
		}
		// The server takes networks in canonical form only.
		if p.Masked() != p {
			return fmt.Errorf("%q has host bits set: did you mean %s?", c, p.Masked())
		}
	}
	if o.PodCIDRs != nil && len(o.PodCIDRs) == 0 {
		return fmt.Errorf("--pod-cidrs needs at least one CIDR")
	}
	if o.WireguardCIDR != nil && *o.WireguardCIDR == "" {
		return fmt.Errorf("--wireguard-cidr needs a CIDR")
	}
	return nil
}

func (o *Options) completeMemberContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	if o.MemberKubeconfig == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cfg, err := clientcmd.LoadFromFile(o.MemberKubeconfig)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for name := range cfg.Contexts {
		names = append(names, name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// report writes join's account of what it does: to stdout, or to stderr
// under --dry-run, whose stdout is the objects alone.
func (o *Options) report() io.Writer {
	if o.DryRun {
		return o.ErrOut
	}
	return o.Out
}
