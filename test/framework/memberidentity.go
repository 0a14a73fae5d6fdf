package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

// CreateMemberSecret makes cluster i a member as an administrator would by
// hand: it applies artifacts/member there (the least-privileged identity and
// the mcs-api CRDs), waits for the CRDs, and writes a kubeconfig of that
// identity, with a token valid for an hour, into Secret ns/name of the host
// cluster under the key kubeconfig.
func (e *Env) CreateMemberSecret(ctx context.Context, cluster int, ns, name string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	if _, stderr, err := e.Kubectl(ctx, cluster, UserAdmin, "apply", "-k", filepath.Join(root, "artifacts", "member")); err != nil {
		return fmt.Errorf("applying artifacts/member on cluster %d: %w: %s", cluster, err, stderr)
	}
	if err := e.WaitMCSCRDsEstablished(ctx, cluster); err != nil {
		return err
	}
	token, err := e.ServiceAccountToken(ctx, cluster, member.Namespace, member.ServiceAccount, time.Hour)
	if err != nil {
		return err
	}
	kubeconfig, err := e.KubeconfigFor(cluster, member.ServiceAccount, token)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if _, err := e.Client(HostCluster, UserAdmin).CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", ns, name, err)
	}
	return nil
}
