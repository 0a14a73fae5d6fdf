package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	meshadmission "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/admission"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/etcd"
	generatedopenapi "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/generated/openapi"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plancache"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/podenv"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/reconciler"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/servingcert"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
)

const etcdPathPrefix = "/registry/mesh.kilo.squat.ai"

// watchDrainPeriod bounds how long shutdown waits for the watches it ends
// to return, at 200 or more a second, well inside a pod's grace period.
const watchDrainPeriod = 5 * time.Second

// connDrainPeriod bounds how long, from when it stops listening, the HTTP
// server waits for its connections to close: Go never tells one whose
// handshake ends just after that to go away (golang/go#81153), and the
// generic server would wait for it the whole request timeout.
const connDrainPeriod = watchDrainPeriod + 3*time.Second

// Options are the server's command-line settings: the generic ones of every
// aggregated API server (serving, delegated authn/authz, admission, audit,
// priority and fairness, etcd) and where the embedded etcd lives.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions

	// DataDir holds the embedded etcd's data and its client socket; unused
	// with --etcd-servers.
	DataDir string
	// StoreQuotaBytes is the embedded etcd's space quota, or the external
	// etcd's as told; reported as kilo_mesh_store_quota_bytes.
	StoreQuotaBytes int64

	// AllowedCIDRs limits the networks any mesh may claim; empty allows all.
	AllowedCIDRs []string
	// AllowInsecureKubeconfigs accepts tenant kubeconfigs that skip TLS verification.
	AllowInsecureKubeconfigs bool
	// MemberQPS and MemberBurst bound the requests to each member cluster.
	MemberQPS   float32
	MemberBurst int
	// MemberServerCIDRs are the networks member API servers may be in;
	// empty allows public addresses only.
	MemberServerCIDRs []string
	// MaxMemberNodes bounds the Nodes cached of one member cluster.
	MaxMemberNodes int
	// MaxMemberPeers bounds the Peers cached of one tenant's member cluster.
	MaxMemberPeers int
	// MaxServiceExports and MaxEndpointsPerService bound the services
	// caches of one member cluster.
	MaxServiceExports      int
	MaxEndpointsPerService int
	// MaxMemberCacheMiB bounds the weight of what is cached of one
	// tenant's member cluster, in MiB.
	MaxMemberCacheMiB int
	// MaxMemberCacheTotalMiB and MaxNamespaceMemberCacheMiB bound what is
	// cached of all tenants' member clusters and of one namespace's; 0:
	// derived from MemoryLimit (memberCacheBudget).
	MaxMemberCacheTotalMiB     int
	MaxNamespaceMemberCacheMiB int
	// MemoryLimit is the container's memory limit; Go's heap is kept
	// under a share of it (memlimit.go).
	MemoryLimit string
	// Reconciler configures the controller that writes Peers.
	Reconciler *reconciler.Options
	// HostAccessGracePeriod is how long meshes stored before grants
	// existed, and covered by none, keep their access to the local cluster.
	HostAccessGracePeriod time.Duration
	// ServingCert configures the self-managed serving certificate, used
	// when no --tls-cert-file is given.
	ServingCert *servingcert.Options

	// namespace is the pod's own (podenv.DefaultNamespace outside a pod)
	// and inPod whether the server runs in one; decided in Complete.
	namespace string
	inPod     bool
	// selfManagedCert is decided in Complete: no --tls-cert-file and a
	// --serving-cert-secret.
	selfManagedCert bool
	// certs serves the self-managed certificate; built in Config.
	certs *servingcert.Controller
	// embeddedEtcd is decided in Complete: no --etcd-servers means embedded.
	embeddedEtcd bool
	// admission enforces the rules that need other objects; built in Complete.
	admission *meshadmission.Plugin
	// memberServers is MemberServerCIDRs parsed in Complete.
	memberServers []netip.Prefix
}

// NewOptions returns options with the defaults of a single replica.
func NewOptions() *Options {
	o := &Options{
		RecommendedOptions: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			Codecs.LegacyCodec(meshv1alpha1.SchemeGroupVersion)),
		DataDir:                "/var/lib/kilo-mesh-apiserver/etcd",
		StoreQuotaBytes:        etcd.DefaultQuotaBytes,
		Reconciler:             reconciler.NewOptions(),
		ServingCert:            servingcert.NewOptions(),
		MemberQPS:              clusters.DefaultQPS,
		MemberBurst:            clusters.DefaultBurst,
		HostAccessGracePeriod:  plancache.DefaultGracePeriod,
		MaxMemberNodes:         clusters.DefaultMaxNodes,
		MaxMemberPeers:         clusters.DefaultMaxPeers,
		MaxServiceExports:      clusters.DefaultMaxServiceExports,
		MaxEndpointsPerService: clusters.DefaultMaxEndpointsPerService,
		MaxMemberCacheMiB:      clusters.DefaultMaxCacheBytes >> 20,
	}
	// Objects are always stored as v1alpha1, whatever a client sent.
	o.RecommendedOptions.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		meshv1alpha1.SchemeGroupVersion, schema.GroupKind{Group: meshv1alpha1.GroupName})
	return o
}

// AddFlags registers every option on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory of the embedded etcd's data, kept across restarts, and of its client socket (etcd.sock; the directory is kept at mode 0700, "+
			"so only the server's user can reach it). One server per directory. Ignored when --etcd-servers is set.")
	fs.Int64Var(&o.StoreQuotaBytes, "etcd-quota-backend-bytes", o.StoreQuotaBytes,
		"The store's space quota in bytes: the embedded etcd refuses writes beyond it, as etcd does (keep it well under its volume, which "+
			"also holds etcd's logs); with --etcd-servers, give the external etcd's --quota-backend-bytes. Reported as kilo_mesh_store_quota_bytes, "+
			"the measure of the alert on the store filling up.")
	fs.StringSliceVar(&o.AllowedCIDRs, "allowed-cidrs", o.AllowedCIDRs,
		"Networks that meshes may claim, e.g. 10.0.0.0/8,fd00::/8. Every CIDR of every mesh must lie inside one. Empty allows any.")
	fs.BoolVar(&o.AllowInsecureKubeconfigs, "allow-insecure-kubeconfigs", o.AllowInsecureKubeconfigs,
		"Accept member-cluster kubeconfigs with insecure-skip-tls-verify. Off by default: tenants' kubeconfigs are untrusted.")
	fs.Float32Var(&o.MemberQPS, "member-cluster-qps", o.MemberQPS,
		"Peer writes per second to each member cluster; it sets how fast a new mesh's Peers appear. The caches' lists and watches "+
			"have a limit of their own, this one or 50 per second, whichever is lower.")
	fs.IntVar(&o.MemberBurst, "member-cluster-burst", o.MemberBurst, "Burst of Peer writes to each member cluster (of lists and watches: this or 100, whichever is lower).")
	fs.DurationVar(&o.HostAccessGracePeriod, "host-access-grace-period", o.HostAccessGracePeriod,
		"How long ClusterMeshes stored before ClusterMeshGrants existed, and covered by none, keep their Peers on the cluster this server runs in "+
			"(with Granted=False and an event) before losing them. Create the grants before upgrading.")
	fs.StringSliceVar(&o.MemberServerCIDRs, "member-server-cidrs", o.MemberServerCIDRs,
		"Networks the API servers of member clusters may have addresses in, e.g. 203.0.113.0/24,10.20.0.0/16; checked on the address "+
			"actually dialled. Empty allows public addresses only. Loopback, link-local, unspecified and cloud metadata addresses are "+
			"refused unless a network inside their range is listed (e.g. 127.0.0.0/8).")
	fs.IntVar(&o.MaxMemberNodes, "max-member-nodes", o.MaxMemberNodes,
		"Most Nodes cached of one member cluster; a cluster with more is not used, and its meshes say so, so that no member can exhaust the server's memory.")
	fs.IntVar(&o.MaxMemberPeers, "max-member-peers", o.MaxMemberPeers,
		"Most Kilo Peers cached of one member cluster reached with a tenant's kubeconfig; a cluster with more is not used, and its meshes say so. "+
			"The cluster this server runs in is not limited: its Peers are the ones this server writes.")
	fs.IntVar(&o.MaxServiceExports, "max-service-exports-per-cluster", o.MaxServiceExports,
		"Most ServiceExports cached of one member cluster of a mesh with multi-cluster services; a cluster with more has its services unused "+
			"(what was imported from it is kept as last known), and its meshes say so.")
	fs.IntVar(&o.MaxEndpointsPerService, "max-endpoints-per-service", o.MaxEndpointsPerService,
		"Most endpoints of one exported Service; a cluster exporting a Service with more has its services unused "+
			"(what was imported from it is kept as last known), and its meshes say so.")
	fs.IntVar(&o.MaxMemberCacheMiB, "max-member-cache-mib", o.MaxMemberCacheMiB,
		"Most memory, in MiB, that what is cached of one member cluster reached with a tenant's kubeconfig may take, its Nodes and Peers together; "+
			"a cluster needing more is not used, and its meshes say so.")
	fs.IntVar(&o.MaxMemberCacheTotalMiB, "max-member-cache-total-mib", o.MaxMemberCacheTotalMiB,
		"Most memory, in MiB, that what is cached of all member clusters reached with tenants' kubeconfigs may take together. Once it is taken, "+
			"a namespace still gets its fair share (this divided among the namespaces using members), up to twice this in all. "+
			"0: a quarter of --memory-limit, or 1024 without one.")
	fs.IntVar(&o.MaxNamespaceMemberCacheMiB, "max-namespace-member-cache-mib", o.MaxNamespaceMemberCacheMiB,
		"Most memory, in MiB, that what is cached of the member clusters of one namespace's meshes may take together; a cluster that would take "+
			"the namespace over it is not used, and its meshes say so (NamespaceMemberBudgetExceeded). 0: half of --max-member-cache-total-mib.")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit,
		"The memory limit of the server's container, e.g. 512Mi or the bytes the kubelet passes for limits.memory. Go's collector keeps the "+
			"server's memory under 90% of it (unless GOMEMLIMIT is set), so that the garbage of reading member clusters' largest answers is "+
			"collected before the container is killed. Empty: no limit.")
	o.Reconciler.AddFlags(fs)
	o.ServingCert.AddFlags(fs)
}

// Complete decides between embedded and external etcd and between a
// certificate from files and the self-managed one, puts the Lease and the
// certificate's Secret into the pod's own namespace unless told otherwise,
// and adds the mesh admission plugin after the generic ones, so admins'
// webhooks and policies still see every mesh.
func (o *Options) Complete() error {
	o.namespace, o.inPod = podenv.Namespace()
	if o.Reconciler.LeaderElection.ResourceNamespace == "" {
		o.Reconciler.LeaderElection.ResourceNamespace = o.namespace
	}
	if o.ServingCert.Namespace == "" {
		o.ServingCert.Namespace = o.namespace
	}
	certFiles := o.RecommendedOptions.SecureServing.ServerCert.CertKey
	o.selfManagedCert = certFiles.CertFile == "" && certFiles.KeyFile == "" && o.ServingCert.SecretName != ""
	if len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) == 0 {
		o.embeddedEtcd = true
		if o.DataDir == "" {
			return fmt.Errorf("--data-dir is required with the embedded etcd (no --etcd-servers)")
		}
		client, err := etcd.ClientURL(o.DataDir)
		if err != nil {
			return err
		}
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{client}
	}
	allowed, err := parseCIDRs(o.AllowedCIDRs)
	if err != nil {
		return fmt.Errorf("--allowed-cidrs: %w", err)
	}
	if o.memberServers, err = parseServerCIDRs(o.MemberServerCIDRs); err != nil {
		return fmt.Errorf("--member-server-cidrs: %w", err)
	}
	o.admission = meshadmission.New(allowed)
	o.admission.Register(o.RecommendedOptions.Admission.Plugins)
	o.RecommendedOptions.Admission.RecommendedPluginOrder = append(o.RecommendedOptions.Admission.RecommendedPluginOrder, meshadmission.PluginName)
	return nil
}

func parseCIDRs(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		p, err := validation.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("%q %w", s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseServerCIDRs parses networks of member API servers: unlike mesh
// networks they may be single addresses, loopback or a default route.
func parseServerCIDRs(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		p, err := netip.ParsePrefix(s)
		if err != nil || p != p.Masked() {
			return nil, fmt.Errorf("%q must be a CIDR in canonical form, such as 203.0.113.0/24 or 127.0.0.0/8", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	errs := o.RecommendedOptions.Validate()
	errs = append(errs, o.Reconciler.Validate()...)
	if o.MaxMemberNodes < 1 || o.MaxMemberPeers < 1 || o.MaxMemberCacheMiB < 1 {
		errs = append(errs, fmt.Errorf("--max-member-nodes, --max-member-peers and --max-member-cache-mib must be positive"))
	}
	if o.MaxServiceExports < 1 || o.MaxEndpointsPerService < 1 {
		errs = append(errs, fmt.Errorf("--max-service-exports-per-cluster and --max-endpoints-per-service must be positive"))
	}
	if o.MaxMemberCacheTotalMiB < 0 || o.MaxNamespaceMemberCacheMiB < 0 {
		errs = append(errs, fmt.Errorf("--max-member-cache-total-mib and --max-namespace-member-cache-mib must not be negative"))
	}
	if o.selfManagedCert {
		errs = append(errs, o.ServingCert.Validate()...)
	}
	if o.MemberQPS <= 0 || o.MemberBurst < 1 {
		errs = append(errs, fmt.Errorf("--member-cluster-qps and --member-cluster-burst must be positive"))
	}
	if o.HostAccessGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--host-access-grace-period must not be negative"))
	}
	if _, err := goMemoryLimit(o.MemoryLimit, ""); err != nil {
		errs = append(errs, err)
	}
	return utilerrors.NewAggregate(errs)
}

// Config builds the server configuration from the options and, with the
// self-managed certificate, the controller that provides it.
func (o *Options) Config() (*Config, error) {
	if !o.selfManagedCert {
		if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil,
			[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
			return nil, fmt.Errorf("creating self-signed certificates: %w", err)
		}
	}
	c := genericapiserver.NewRecommendedConfig(Codecs)
	namer := openapi.NewDefinitionNamer(Scheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIConfig.Info.Title = "kilo-mesh-apiserver"
	c.OpenAPIConfig.Info.Version = meshv1alpha1.SchemeGroupVersion.Version
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIV3Config.Info.Title = "kilo-mesh-apiserver"
	c.OpenAPIV3Config.Info.Version = meshv1alpha1.SchemeGroupVersion.Version
	c.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	c.FeatureGate = utilfeature.DefaultFeatureGate
	// Left zero, watches (the aggregator's, for the controller manager's
	// garbage collector and quota) are not ended on SIGTERM, and the server
	// waits the whole request timeout for them: a minute, past a pod's grace.
	c.ShutdownWatchTerminationGracePeriod = watchDrainPeriod
	if err := o.RecommendedOptions.ApplyTo(c); err != nil {
		return nil, fmt.Errorf("applying options: %w", err)
	}
	// Admission's Secret reads get a client of their own, so that tenants'
	// writes wait behind no other request of the server (nor it behind them).
	if c.ClientConfig != nil {
		secretCfg := rest.CopyConfig(c.ClientConfig)
		secretCfg.QPS, secretCfg.Burst = meshadmission.SecretClientQPS, meshadmission.SecretClientBurst
		secretClient, err := kubernetes.NewForConfig(secretCfg)
		if err != nil {
			return nil, fmt.Errorf("building admission's client of Secrets: %w", err)
		}
		o.admission.SetExternalKubeClientSet(secretClient)
	}
	if o.selfManagedCert {
		certs, err := servingcert.NewForConfig(*o.ServingCert, c.ClientConfig)
		if err != nil {
			return nil, fmt.Errorf("building the serving certificate's controller: %w", err)
		}
		// The generic server runs it (RunOnce, then Run) and serves
		// whatever it holds.
		c.SecureServing.Cert = certs
		o.certs = certs
	}
	reportServerMetrics(c.SecureServing.Cert, o.StoreQuotaBytes)
	memberTotal, memberNamespace, err := memberCacheBudget(o.MemoryLimit, o.MaxMemberCacheTotalMiB, o.MaxNamespaceMemberCacheMiB)
	if err != nil {
		return nil, err
	}
	return &Config{GenericConfig: c, ExtraConfig: ExtraConfig{
		Admission:                  o.admission,
		Local:                      c.ClientConfig,
		AllowInsecureSkipTLSVerify: o.AllowInsecureKubeconfigs,
		MemberQPS:                  o.MemberQPS,
		MemberBurst:                o.MemberBurst,
		MemberServerCIDRs:          o.memberServers,
		MaxMemberNodes:             o.MaxMemberNodes,
		MaxMemberPeers:             o.MaxMemberPeers,
		MaxServiceExports:          o.MaxServiceExports,
		MaxEndpointsPerService:     o.MaxEndpointsPerService,
		MaxMemberCacheBytes:        int64(o.MaxMemberCacheMiB) << 20,
		MaxNamespaceCacheBytes:     memberNamespace,
		MaxMemberCacheTotalBytes:   memberTotal,
		Reconciler:                 o.Reconciler,
		HostAccessGracePeriod:      o.HostAccessGracePeriod,
		Version:                    version.Get().Version,
	}}, nil
}

// Run starts the embedded etcd when needed, then serves until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	if err := applyMemoryLimit(o.MemoryLimit); err != nil {
		return err
	}
	if o.embeddedEtcd {
		e, err := etcd.Start(ctx, etcd.Config{DataDir: o.DataDir, QuotaBytes: o.StoreQuotaBytes})
		if err != nil {
			return err
		}
		defer e.Close()
	}
	c, err := o.Config()
	if err != nil {
		return err
	}
	if err := o.checkBeforeServing(ctx, c.GenericConfig.ClientConfig); err != nil {
		return err
	}
	if c.ExtraConfig.Installation, err = installationID(ctx, c.GenericConfig.ClientConfig, o.namespace); err != nil {
		return err
	}
	s, err := c.Complete().New()
	if err != nil {
		return err
	}
	klog.InfoS("Serving", "group", meshv1alpha1.SchemeGroupVersion, "embeddedEtcd", o.embeddedEtcd)
	return s.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}
