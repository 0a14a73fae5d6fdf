package apiserver

import (
	"crypto/x509"
	"encoding/pem"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The server's own figures of what an operator pages on besides the
// reconciler's: the serving certificate running out, the store filling up.
var (
	// servingCert is the certificate the server serves, whichever provides
	// it (the self-managed controller or the files cert-manager renews).
	servingCert dynamiccertificates.CertKeyContentProvider
	storeQuota  float64
	metricsMu   sync.Mutex

	servingCertExpiry = metrics.NewGaugeFunc(&metrics.GaugeOpts{
		Namespace:      "kilo_mesh",
		Name:           "serving_certificate_expiry_timestamp_seconds",
		Help:           "When the certificate the server serves expires, in seconds since the epoch, read at every scrape.",
		StabilityLevel: metrics.ALPHA,
	}, func() float64 {
		metricsMu.Lock()
		p := servingCert
		metricsMu.Unlock()
		return certExpiry(p)
	})

	storeQuotaBytes = metrics.NewGaugeFunc(&metrics.GaugeOpts{
		Namespace:      "kilo_mesh",
		Name:           "store_quota_bytes",
		Help:           "The store's space quota (--etcd-quota-backend-bytes): compare apiserver_storage_size_bytes with it.",
		StabilityLevel: metrics.ALPHA,
	}, func() float64 {
		metricsMu.Lock()
		defer metricsMu.Unlock()
		return storeQuota
	})

	registerServerMetrics sync.Once
)

// reportServerMetrics registers the server's own gauges once and points
// them at this configuration's certificate and quota.
func reportServerMetrics(cert dynamiccertificates.CertKeyContentProvider, quota int64) {
	registerServerMetrics.Do(func() { legacyregistry.RawMustRegister(servingCertExpiry, storeQuotaBytes) })
	metricsMu.Lock()
	defer metricsMu.Unlock()
	servingCert, storeQuota = cert, float64(quota)
}

// certExpiry is the NotAfter of the first certificate p serves, 0 when
// there is none yet.
func certExpiry(p dynamiccertificates.CertKeyContentProvider) float64 {
	if p == nil {
		return 0
	}
	certPEM, _ := p.CurrentCertKeyContent()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return 0
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return 0
	}
	return float64(c.NotAfter.Unix())
}
