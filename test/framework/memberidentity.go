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

// MemberInstall is a way a user installs the member identity on a member
// cluster: its base rights, or those and its services rights.
type MemberInstall int

const (
	// MemberBase is kubectl apply -k artifacts/member: the base rights and
	// the mcs-api CRDs.
	MemberBase MemberInstall = iota
	// MemberServices is kubectl apply -k artifacts/overlays/member-services:
	// MemberBase and the services rights.
	MemberServices
	// MemberChartServices is the member chart with services.enabled=true
	// (release kilo-mesh-member in namespace default).
	MemberChartServices
)

// InstallMember installs the member identity on cluster the way how says,
// as a cluster's administrator would, and waits for the mcs-api CRDs.
func (e *Env) InstallMember(ctx context.Context, cluster int, how MemberInstall) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	var args []string
	switch how {
	case MemberBase:
		args = []string{"apply", "-k", filepath.Join(root, "artifacts", "member")}
	case MemberServices:
		args = []string{"apply", "-k", filepath.Join(root, "artifacts", "overlays", "member-services")}
	case MemberChartServices:
		args = []string{"upgrade", "--install", "kilo-mesh-member", filepath.Join(root, "artifacts", "charts", "kilo-mesh-member"),
			"--namespace", "default", "--set", "services.enabled=true"}
	default:
		return fmt.Errorf("unknown member install %d", how)
	}
	run := e.Kubectl
	if how == MemberChartServices {
		run = e.Helm
	}
	if _, stderr, err := run(ctx, cluster, UserAdmin, args...); err != nil {
		return fmt.Errorf("installing the member identity on cluster %d (%v): %w: %s", cluster, args, err, stderr)
	}
	return e.WaitMCSCRDsEstablished(ctx, cluster)
}

// CreateMemberSecret makes cluster i a member as an administrator would by
// hand: it installs the member identity there the way how says, and writes
// a kubeconfig of that identity, with a token valid for an hour, into
// Secret ns/name of the host cluster under the key kubeconfig.
func (e *Env) CreateMemberSecret(ctx context.Context, cluster int, ns, name string, how MemberInstall) error {
	if err := e.InstallMember(ctx, cluster, how); err != nil {
		return err
	}
	kubeconfig, err := e.MemberKubeconfig(ctx, cluster)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if _, err := e.Client(HostCluster, UserAdmin).CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", ns, name, err)
	}
	return nil
}

// MemberKubeconfig is a kubeconfig of the member identity on cluster, with
// a token valid for an hour.
func (e *Env) MemberKubeconfig(ctx context.Context, cluster int) ([]byte, error) {
	token, err := e.ServiceAccountToken(ctx, cluster, member.Namespace, member.ServiceAccount, time.Hour)
	if err != nil {
		return nil, err
	}
	return e.KubeconfigFor(cluster, member.ServiceAccount, token)
}
