// Package cli holds what every `kubectl mesh` command shares: the kubeconfig
// flags of the host cluster (the one serving mesh.kilo.squat.ai), clients
// for it, and exit codes.
package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// UserAgent is sent on every request, so that server logs and audit name the plugin.
const UserAgent = "kubectl-mesh"

// FieldManager is the server-side apply field manager of the plugin's writes.
const FieldManager = "kubectl-mesh"

// Options are the global flags and streams of the plugin.
type Options struct {
	genericiooptions.IOStreams
	// Config holds --kubeconfig, --context, -n and the other kubeconfig
	// flags kubectl users expect; they select the host cluster.
	Config *genericclioptions.ConfigFlags
}

// NewOptions returns options writing to streams.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	cfg := genericclioptions.NewConfigFlags(true)
	// --cluster names a member cluster of a mesh in this plugin (peers,
	// why); kubectl's --cluster (a cluster of the kubeconfig) is rarely
	// used and --context covers it.
	cfg.ClusterName = nil
	return &Options{IOStreams: streams, Config: cfg}
}

// Namespace is the namespace of the mesh: -n, else the context's.
func (o *Options) Namespace() (string, error) {
	ns, _, err := o.Config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// RESTConfig is the client configuration of the host cluster.
func (o *Options) RESTConfig() (*rest.Config, error) {
	cfg, err := o.Config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = UserAgent
	return cfg, nil
}

// MemberConfig is the caller's own configuration of a member cluster, from
// --member-kubeconfig and --member-context: used for what the caller does
// there, never written anywhere.
func MemberConfig(file, context string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: file}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--member-kubeconfig %s: %w", file, err)
	}
	cfg.UserAgent = UserAgent
	return cfg, nil
}

// Host returns clients of the host cluster.
func (o *Options) Host() (*Clients, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	return NewClients(cfg)
}

// Clients talk to one cluster.
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// NewClients builds the clients of the cluster cfg reaches.
func NewClients(cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Kube: kube, Dynamic: dyn}, nil
}

// Meshes returns a client of the mesh API on the host cluster.
func (o *Options) Meshes() (*MeshAPI, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	return NewMeshAPI(cfg)
}

// NamespacedMeshes is what every command about a mesh starts from: the
// namespace of the mesh and a client of the mesh API.
func (o *Options) NamespacedMeshes() (string, *MeshAPI, error) {
	ns, err := o.Namespace()
	if err != nil {
		return "", nil, err
	}
	api, err := o.Meshes()
	if err != nil {
		return "", nil, err
	}
	return ns, api, nil
}

// MeshArgs is the usual Args of a command taking the name of a mesh.
func MeshArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s takes the name of a ClusterMesh, e.g. kubectl mesh %s demo", cmd.Name(), cmd.Name())
	}
	return nil
}
