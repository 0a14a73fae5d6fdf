package clusters

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// buildClients builds the connection's clients and rate limiters on its
// transport, and returns the Node client its cache lists with.
func (c *cluster) buildClients(cfg *rest.Config, opts clusterOptions) (*corev1client.CoreV1Client, error) {
	// One connection pool per cluster, released with it. The Peer writes
	// have a rate limiter of their own, the caches another, and the probe
	// another, so that none is queued behind the others' bursts (a change's
	// write behind a relist, a probe behind a mesh's creation). No client
	// follows a redirect.
	watchClient := &http.Client{Transport: c.transport, CheckRedirect: memberaccess.NoRedirects}
	// The writes' deadline is the context's: a client timeout would start
	// a goroutine per write (memberaccess.WithDeadline).
	requestClient := &http.Client{Transport: memberaccess.WithDeadline(c.transport, requestTimeout), CheckRedirect: memberaccess.NoRedirects}
	// The probe's requests tell the member the probe's own timeout (the
	// timeout parameter client-go sends), not the writes' longer one.
	probeClient := &http.Client{Transport: c.transport, Timeout: opts.probeTimeout, CheckRedirect: memberaccess.NoRedirects}
	c.identityClient = requestClient
	probeCfg := rest.CopyConfig(cfg)
	c.writeLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	c.cacheLimiter = flowcontrol.NewTokenBucketRateLimiter(min(cfg.QPS, CacheQPS), min(cfg.Burst, CacheBurst))
	writeCfg := rest.CopyConfig(cfg)
	writeCfg.RateLimiter = c.writeLimiter
	cfg.RateLimiter = c.cacheLimiter

	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	// Group clients, not clientsets: a clientset holds a REST client of
	// every API group, about 50 KB per connection, hundreds of them.
	core, err := corev1client.NewForConfigAndClient(kubeCfg, watchClient)
	if err != nil {
		return nil, fmt.Errorf("building the client: %w", err)
	}
	peerCfg := rest.CopyConfig(cfg)
	peerCfg.GroupVersion = &kilov1alpha1.SchemeGroupVersion
	peerCfg.APIPath = "/apis"
	peerCfg.NegotiatedSerializer = peerCodecs.WithoutConversion()
	peerCfg.ContentType = runtime.ContentTypeJSON
	if c.peerRead, err = rest.RESTClientForConfigAndClient(peerCfg, watchClient); err != nil {
		return nil, fmt.Errorf("building the Peer client: %w", err)
	}
	peerWriteCfg := rest.CopyConfig(peerCfg)
	peerWriteCfg.RateLimiter = c.writeLimiter
	if c.peerApply, err = rest.RESTClientForConfigAndClient(peerWriteCfg, requestClient); err != nil {
		return nil, fmt.Errorf("building the Peer client: %w", err)
	}
	dynWrite, err := dynamic.NewForConfigAndClient(writeCfg, requestClient)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	if c.meta, err = metadata.NewForConfigAndClient(writeCfg, requestClient); err != nil {
		return nil, fmt.Errorf("building the metadata client: %w", err)
	}
	probe, err := discovery.NewDiscoveryClientForConfigAndClient(probeCfg, probeClient)
	if err != nil {
		return nil, fmt.Errorf("building the probe client: %w", err)
	}
	// Most connections never carry services: their clients are built on
	// first use.
	c.newSvcClients = func() (*servicesClients, error) {
		return newServicesClients(kubeCfg, cfg, watchClient, requestClient)
	}
	c.peerWrite = dynWrite.Resource(kilov1alpha1.PeerResource)
	c.probeREST = probe.RESTClient()
	return core, nil
}
