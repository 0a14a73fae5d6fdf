package apiserver

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/podenv"
)

// TestCompleteDefaults: the Lease and the certificate's Secret follow the
// pod's namespace unless a flag names one; the certificate is self-managed
// unless certificate files are given; the embedded etcd is reached on the
// socket in --data-dir.
func TestCompleteDefaults(t *testing.T) {
	tests := []struct {
		name                  string
		podNamespace          string
		args                  []string
		leaseNS, certNS       string
		selfManaged, embedded bool
	}{
		{name: "in a pod", podNamespace: "mesh", leaseNS: "mesh", certNS: "mesh", selfManaged: true, embedded: true},
		{name: "outside a pod", leaseNS: podenv.DefaultNamespace, certNS: podenv.DefaultNamespace, selfManaged: true, embedded: true},
		{
			name: "flags win", podNamespace: "mesh",
			args:    []string{"--leader-elect-resource-namespace=leases", "--serving-cert-namespace=certs", "--etcd-servers=https://etcd:2379"},
			leaseNS: "leases", certNS: "certs", selfManaged: true,
		},
		{
			name: "certificate files", podNamespace: "mesh", args: []string{"--tls-cert-file=tls.crt", "--tls-private-key-file=tls.key"},
			leaseNS: "mesh", certNS: "mesh", embedded: true,
		},
		{
			name: "self-management off", podNamespace: "mesh", args: []string{"--serving-cert-secret="},
			leaseNS: "mesh", certNS: "mesh", embedded: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(podenv.NamespaceEnv, tt.podNamespace)
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(append([]string{"--data-dir=/var/lib/k"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(); err != nil {
				t.Fatal(err)
			}
			if got := o.Reconciler.LeaderElection.ResourceNamespace; got != tt.leaseNS {
				t.Errorf("Lease namespace %q, want %q", got, tt.leaseNS)
			}
			if o.ServingCert.Namespace != tt.certNS || o.selfManagedCert != tt.selfManaged {
				t.Errorf("certificate: namespace %q, self-managed %v; want %q, %v", o.ServingCert.Namespace, o.selfManagedCert, tt.certNS, tt.selfManaged)
			}
			servers := o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList
			if o.embeddedEtcd != tt.embedded || (tt.embedded && servers[0] != "unix:///var/lib/k/etcd.sock") {
				t.Errorf("embedded %v, etcd servers %v", o.embeddedEtcd, servers)
			}
			if err := o.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
