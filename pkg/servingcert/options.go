package servingcert

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults of the flags: the names artifacts/deploy installs.
const (
	DefaultSecretName     = "kilo-mesh-apiserver-serving-cert"
	DefaultServiceName    = "kilo-mesh-apiserver"
	DefaultAPIServiceName = "v1alpha1.mesh.kilo.squat.ai"
	DefaultValidity       = 90 * 24 * time.Hour
	DefaultCAValidity     = 3 * 365 * 24 * time.Hour
)

// minValidity keeps a mistyped flag from renewing certificates in a tight
// loop; tests of rotation use a few seconds.
const minValidity = 3 * time.Second

// Options say which Secret, Service and APIService the server's own
// certificate authority works with, and how long its certificates live.
type Options struct {
	// SecretName is the Secret (in Namespace) that holds the CA and the
	// serving certificate, shared by every replica. Empty turns the
	// self-managed certificate off.
	SecretName string
	// Namespace holds the Secret and the Service; default: the pod's own.
	Namespace string
	// ServiceName is the Service the aggregator reaches the server
	// through; the certificate is for <service>.<namespace>.svc.
	ServiceName string
	// APIServiceName is the APIService whose caBundle is kept in step;
	// empty leaves every APIService alone.
	APIServiceName string
	// Validity of each serving certificate; it is renewed when a third is left.
	Validity time.Duration
	// CAValidity of each CA; a new CA is made when a third is left, and the
	// old one stays trusted until it expires.
	CAValidity time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		SecretName:     DefaultSecretName,
		ServiceName:    DefaultServiceName,
		APIServiceName: DefaultAPIServiceName,
		Validity:       DefaultValidity,
		CAValidity:     DefaultCAValidity,
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SecretName, "serving-cert-secret", o.SecretName,
		"Without --tls-cert-file, the server runs its own CA: it keeps the CA and its serving certificate in this Secret "+
			"(shared by all replicas; it must exist, artifacts/deploy ships it empty), serves the certificate directly, "+
			"renews it before it expires and keeps the caBundle of --serving-cert-apiservice in step. "+
			"Empty: serve a throwaway self-signed certificate instead (for local experiments only).")
	fs.StringVar(&o.Namespace, "serving-cert-namespace", o.Namespace,
		"Namespace of --serving-cert-secret and --serving-cert-service. Default: the pod's own namespace ($POD_NAMESPACE or the ServiceAccount's), kilo-mesh-system outside a pod.")
	fs.StringVar(&o.ServiceName, "serving-cert-service", o.ServiceName,
		"Service through which the aggregator reaches the server; the certificate is valid for <service>.<namespace>.svc.")
	fs.StringVar(&o.APIServiceName, "serving-cert-apiservice", o.APIServiceName,
		"APIService whose caBundle the server keeps in step with its CA. Empty: leave APIServices alone.")
	fs.DurationVar(&o.Validity, "serving-cert-validity", o.Validity,
		"How long each self-managed serving certificate is valid; it is renewed when a third of that is left.")
	fs.DurationVar(&o.CAValidity, "serving-cert-ca-validity", o.CAValidity,
		"How long each self-managed CA is valid; a new one is made when a third is left, and the old one stays in the caBundle until it expires. At least twice --serving-cert-validity.")
}

// Validate reports every invalid option at once; call it only when the
// self-managed certificate is in use.
func (o *Options) Validate() []error {
	var errs []error
	for _, name := range []struct {
		flag, value string
		check       func(string) []string
	}{
		{"--serving-cert-secret", o.SecretName, validation.IsDNS1123Subdomain},
		{"--serving-cert-namespace", o.Namespace, validation.IsDNS1123Label},
		{"--serving-cert-service", o.ServiceName, validation.IsDNS1035Label},
	} {
		for _, msg := range name.check(name.value) {
			errs = append(errs, fmt.Errorf("%s %q: %s", name.flag, name.value, msg))
		}
	}
	if o.Validity < minValidity {
		errs = append(errs, fmt.Errorf("--serving-cert-validity must be at least %s, got %s", minValidity, o.Validity))
	}
	if o.CAValidity < 2*o.Validity {
		errs = append(errs, fmt.Errorf("--serving-cert-ca-validity (%s) must be at least twice --serving-cert-validity (%s)", o.CAValidity, o.Validity))
	}
	return errs
}
