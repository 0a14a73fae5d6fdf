package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// DNS is a cluster's CoreDNS for the pods of one node: kubeadm's CoreDNS
// objects configured by `kubectl mesh dns enable`, and the real CoreDNS
// running the Corefile the command wrote inside the node's namespace, on
// that namespace's loopback, as CoreDNS's ServiceAccount. It reads the
// cluster's kube-apiserver through a relay on the same loopback, as a pod
// reaches the API through the kubernetes Service.
type DNS struct {
	*framework.CoreDNS
	relay *framework.TCPProxy
}

// StartDNS configures cluster n.Cluster's CoreDNS with the plugin and
// starts it in n's namespace.
func (b *Bed) StartDNS(ctx context.Context, n *Node) (*DNS, error) {
	if err := b.Env.InstallKubeadmCoreDNS(ctx, n.Cluster, framework.KubeadmCoreDNSImage); err != nil {
		return nil, err
	}
	plugin, err := framework.PluginBinary(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, plugin, "dns", "enable", "--member-kubeconfig", b.Env.Kubeconfig(n.Cluster, framework.UserAdmin))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kubectl mesh dns enable on cluster %d: %w\n%s", n.Cluster, err, out)
	}
	cm, err := b.Env.Client(n.Cluster, framework.UserAdmin).CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	d := &DNS{}
	api := strings.TrimPrefix(b.Env.Cluster(n.Cluster).URL, "https://")
	if d.relay, err = framework.StartTCPProxyIn(n.Namespace, api); err != nil {
		return nil, err
	}
	dir := filepath.Join(b.underlay.LogDir, "coredns-"+n.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Join(err, d.relay.Close())
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", d.relay.Port)
	kubeconfig, err := b.Env.CoreDNSKubeconfig(ctx, n.Cluster, "kube-system", "coredns", server, dir)
	if err != nil {
		return nil, errors.Join(err, d.relay.Close())
	}
	loop, err := framework.NewCoreDNSLoopback(kubeconfig)
	if err != nil {
		return nil, errors.Join(err, d.relay.Close())
	}
	corefile, err := framework.LoopbackCorefile(cm.Data["Corefile"], loop)
	if err != nil {
		return nil, errors.Join(err, d.relay.Close())
	}
	if d.CoreDNS, err = framework.StartCoreDNS(ctx, dir, corefile, loop, b.underlay, n.Namespace); err != nil {
		return nil, errors.Join(err, d.relay.Close())
	}
	return d, nil
}

// Stop ends CoreDNS and the relay.
func (d *DNS) Stop() error { return errors.Join(d.CoreDNS.Stop(), d.relay.Close()) }

// Resolve asks for name's A record, as a pod of the node would, and
// returns its one address.
func (d *DNS) Resolve(name string) (netip.Addr, error) {
	a, err := d.Query(name, dnsmessage.TypeA)
	if err != nil {
		return netip.Addr{}, err
	}
	if a.RCode != dnsmessage.RCodeSuccess || len(a.Addrs) != 1 {
		return netip.Addr{}, fmt.Errorf("%s answers %s", name, a)
	}
	return a.Addrs[0], nil
}

// ResolveAs waits until name resolves to want, for at most timeout.
func (d *DNS) ResolveAs(ctx context.Context, name string, want netip.Addr, timeout time.Duration) error {
	return framework.Eventually(ctx, 100*time.Millisecond, timeout, func(context.Context) error {
		got, err := d.Resolve(name)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s resolves to %s, want %s", name, got, want)
		}
		return nil
	})
}
