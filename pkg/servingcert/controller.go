// Package servingcert gives the server a serving certificate with nothing
// else installed: its own CA and certificate for <service>.<namespace>.svc,
// kept in a Secret of its namespace so that every replica serves the same
// one, served straight from memory through the generic API server's dynamic
// certificate content (no mounted volume, no kubelet refresh), renewed
// before expiry, with the APIService's caBundle kept in step.
//
// Every replica runs the same loop; writes are updates with the Secret's
// resourceVersion, so two replicas racing to fill the Secret cannot both
// win: the loser reads the winner's certificate and serves it. The Secret
// must exist (the manifests ship it empty): RBAC cannot limit `create` to
// one name, and `get`/`update`/`watch` can be.
package servingcert

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	// resync bounds the time between two checks even if nothing changes.
	resync = 10 * time.Minute
	// caBundleSettle is the pause between writing a new caBundle into the
	// APIService and serving a certificate of the new CA, so that the
	// aggregator has seen the bundle first.
	caBundleSettle = 2 * time.Second
	// primeTimeout bounds the wait for a first certificate at start.
	primeTimeout = time.Minute
	queueKey     = "serving-cert"
)

// Controller keeps the serving certificate and provides it to the generic
// API server as its dynamic serving content.
type Controller struct {
	opts        Options
	policy      policy
	kube        kubernetes.Interface
	apiServices *apiServices
	now         func() time.Time
	queue       workqueue.TypedRateLimitingInterface[string]

	mu        sync.Mutex
	certPEM   []byte
	keyPEM    []byte
	listeners []dynamiccertificates.Listener
}

var (
	_ dynamiccertificates.CertKeyContentProvider = &Controller{}
	_ dynamiccertificates.ControllerRunner       = &Controller{}
)

// Config is what New needs.
type Config struct {
	Options Options
	// Kube reads and updates the Secret.
	Kube kubernetes.Interface
	// Dynamic reads and updates the APIService.
	Dynamic dynamic.Interface
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NewForConfig builds the controller with clients of the cluster at cfg.
func NewForConfig(opts Options, cfg *rest.Config) (*Controller, error) {
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "kilo-mesh-apiserver/serving-cert")
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return New(Config{Options: opts, Kube: kube, Dynamic: dyn}), nil
}

// New builds the controller; Prime loads a first certificate.
func New(cfg Config) *Controller {
	o := cfg.Options
	svc := o.ServiceName
	c := &Controller{
		opts: o,
		policy: policy{
			// The aggregator verifies <service>.<namespace>.svc; the
			// others serve clients inside the cluster.
			dnsNames:   []string{svc + "." + o.Namespace + ".svc", svc, svc + "." + o.Namespace, svc + "." + o.Namespace + ".svc.cluster.local"},
			validity:   o.Validity,
			caValidity: o.CAValidity,
		},
		kube:  cfg.Kube,
		now:   cfg.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "serving-cert"}),
	}
	if c.now == nil {
		c.now = time.Now
	}
	if o.APIServiceName != "" {
		c.apiServices = &apiServices{client: cfg.Dynamic, name: o.APIServiceName, namespace: o.Namespace, service: svc}
	}
	return c
}

// Name names the content in the generic API server's logs.
func (c *Controller) Name() string { return "kilo-mesh-serving-cert" }

// CurrentCertKeyContent is the certificate and key being served.
func (c *Controller) CurrentCertKeyContent() ([]byte, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.certPEM, c.keyPEM
}

// AddListener registers the generic API server's certificate controller,
// told whenever the content changes.
func (c *Controller) AddListener(l dynamiccertificates.Listener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners = append(c.listeners, l)
}

// load serves kp from now on.
func (c *Controller) load(kp *keyPair) {
	c.mu.Lock()
	if bytes.Equal(c.certPEM, kp.certPEM) && bytes.Equal(c.keyPEM, kp.keyPEM) {
		c.mu.Unlock()
		return
	}
	first := c.certPEM == nil
	c.certPEM, c.keyPEM = kp.certPEM, kp.keyPEM
	listeners := append([]dynamiccertificates.Listener(nil), c.listeners...)
	c.mu.Unlock()
	klog.InfoS("Serving certificate loaded", "secret", klog.KRef(c.opts.Namespace, c.opts.SecretName),
		"serial", kp.cert.SerialNumber.Text(16), "issuer", kp.cert.Issuer.CommonName, "notAfter", kp.cert.NotAfter.UTC(), "first", first)
	for _, l := range listeners {
		l.Enqueue()
	}
}

// Prime loads a first certificate, creating the CA and certificate when the
// Secret is still empty, retrying for a while (the Secret may be applied
// together with the workload). It fails when there is none to serve.
func (c *Controller) Prime(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, primeTimeout)
	defer cancel()
	var last error
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		_, err := c.sync(ctx)
		if err == nil {
			return nil
		}
		if cert, _ := c.CurrentCertKeyContent(); cert != nil {
			// A certificate is loaded; what failed (e.g. the APIService)
			// is retried by Run.
			klog.ErrorS(err, "Keeping the serving certificate in step")
			return nil
		}
		if last == nil || last.Error() != err.Error() {
			klog.ErrorS(err, "No serving certificate yet; retrying")
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("no serving certificate after %s: %w", primeTimeout, last)
		case <-time.After(delay):
		}
	}
}

// RunOnce syncs once; the generic API server calls it before serving.
func (c *Controller) RunOnce(ctx context.Context) error {
	_, err := c.sync(ctx)
	return err
}

// Run keeps the certificate in step until ctx ends: on every change of the
// Secret or the APIService (watched by name), when a certificate is due,
// and every ten minutes.
func (c *Controller) Run(ctx context.Context, _ int) {
	defer c.queue.ShutDown()
	go c.watchSecret(ctx)
	if c.apiServices != nil {
		go c.apiServices.watch(ctx, c.enqueue)
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	c.enqueue()
	for c.processNext(ctx) {
	}
}

func (c *Controller) enqueue() { c.queue.Add(queueKey) }

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	after, err := c.sync(ctx)
	if err != nil {
		klog.ErrorS(err, "Keeping the serving certificate in step; retrying")
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	c.queue.AddAfter(key, after)
	return true
}

// sync moves the Secret one step (see policy.step), serves its certificate
// and puts its bundle into the APIService. It returns when to sync again.
func (c *Controller) sync(ctx context.Context) (time.Duration, error) {
	secrets := c.kube.CoreV1().Secrets(c.opts.Namespace)
	secret, err := secrets.Get(ctx, c.opts.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("Secret %s/%s does not exist: artifacts/deploy ships it empty (or: kubectl -n %s create secret generic %s); "+
			"or serve a certificate of your own with --tls-cert-file and --tls-private-key-file",
			c.opts.Namespace, c.opts.SecretName, c.opts.Namespace, c.opts.SecretName)
	}
	if err != nil {
		return 0, fmt.Errorf("reading Secret %s/%s: %w", c.opts.Namespace, c.opts.SecretName, err)
	}
	trusted := func(*x509.Certificate) bool { return true }
	if c.apiServices != nil {
		trusted = c.apiServices.trusts(ctx)
	}
	now := c.now()
	next, why, err := c.policy.step(readState(secret.Data), now, trusted)
	if err != nil {
		return 0, err
	}
	if len(why) > 0 {
		updated := secret.DeepCopy()
		updated.Data = next.data()
		if _, err := secrets.Update(ctx, updated, metav1.UpdateOptions{FieldManager: "kilo-mesh-apiserver"}); err != nil {
			if apierrors.IsConflict(err) {
				// Another replica wrote first: take its certificate.
				return 0, fmt.Errorf("Secret %s/%s changed meanwhile (another replica); reading it again", c.opts.Namespace, c.opts.SecretName)
			}
			return 0, fmt.Errorf("updating Secret %s/%s (%s): %w", c.opts.Namespace, c.opts.SecretName, strings.Join(why, "; "), err)
		}
		klog.InfoS("Updated the serving certificate's Secret", "secret", klog.KRef(c.opts.Namespace, c.opts.SecretName), "changes", why)
	}
	if next.serving != nil && usable(next.serving, next.bundle, now) {
		c.load(next.serving)
	}
	after := time.Until(c.policy.nextCheck(next))
	if c.apiServices != nil {
		changed, err := c.apiServices.setBundle(ctx, encodeBundle(next.bundle))
		if err != nil {
			return 0, err
		}
		if changed {
			after = caBundleSettle
		}
	}
	return min(max(after, time.Second), resync), nil
}
