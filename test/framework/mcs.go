package framework

import (
	"bytes"
	"context"
	"fmt"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

// InstallMCSCRDs applies the Multi-Cluster Services API CRDs (ServiceExport,
// ServiceImport of sigs.k8s.io/mcs-api, as artifacts/member ships them) on
// cluster i as the admin and waits until they are Established.
func (e *Env) InstallMCSCRDs(ctx context.Context, cluster int) error {
	for _, crd := range member.CRDs() {
		if _, stderr, err := e.KubectlWithInput(ctx, bytes.NewReader(crd.YAML), cluster, UserAdmin, "apply", "-f", "-"); err != nil {
			return fmt.Errorf("applying CRD %s on cluster %d: %w: %s", crd.Name, cluster, err, stderr)
		}
	}
	return e.WaitMCSCRDsEstablished(ctx, cluster)
}

// WaitMCSCRDsEstablished waits until the mcs-api CRDs are Established on
// cluster i, however they were installed.
func (e *Env) WaitMCSCRDsEstablished(ctx context.Context, cluster int) error {
	for _, crd := range member.CRDs() {
		if err := e.WaitCRDEstablished(ctx, cluster, crd.Name); err != nil {
			return err
		}
	}
	return nil
}
