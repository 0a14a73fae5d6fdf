//go:build e2e

package plugin

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// unexportBound is the MCS conformance suite's bound for a name to stop
// answering once its service is no longer exported.
const unexportBound = 20 * time.Second

// kubeadmEnabled is kubeadm's Corefile as dns enable must leave it.
var kubeadmEnabled = strings.NewReplacer(
	"    kubernetes cluster.local in-addr.arpa ip6.arpa {\n", "    kubernetes cluster.local in-addr.arpa ip6.arpa clusterset.local {\n",
	"       ttl 30\n", "       ttl 30\n       multicluster clusterset.local\n",
	"       disable success cluster.local\n", "       disable success cluster.local clusterset.local\n",
	"       disable denial cluster.local\n", "       disable denial cluster.local clusterset.local\n",
).Replace(framework.KubeadmCorefile)

// TestDNS: kubectl mesh dns configures the stock CoreDNS objects of
// kubeadm on a member cluster, and the real CoreDNS (v1.15.0) runs the
// Corefile the command wrote, on loopback, as CoreDNS's ServiceAccount
// (so with the RBAC the command added), reading the member's
// kube-apiserver: the KEP's clusterset.local names answer what the server
// imported there, and disable gives the cluster its Corefile back.
func TestDNS(t *testing.T) {
	env := startDNSEnv(t)
	ctx := context.Background()
	north := env.Client(dnsImporter, framework.UserAdmin)
	var coredns *framework.CoreDNS
	var loop framework.CoreDNSLoopback
	// CoreDNS's Corefile and log outlive the step that starts it.
	dir := t.TempDir()
	t.Cleanup(func() {
		if coredns != nil {
			_ = coredns.Stop()
		}
	})
	query := func(name string, qtype dnsmessage.Type) *framework.DNSAnswer {
		t.Helper()
		a, err := coredns.Query(name, qtype)
		if err != nil {
			t.Fatalf("%s %s: %v (CoreDNS log %s:\n%s)", name, qtype, err, coredns.LogPath, coredns.LogTail(20))
		}
		return a
	}

	steps := []struct {
		name string
		f    func(t *testing.T)
	}{
		{"status: not configured, and what is missing", func(t *testing.T) {
			wantOutput(t, dnsCmd(t, env, "status"), 2, "CoreDNS of Deployment kube-system/coredns (image "+framework.KubeadmCoreDNSImage+")",
				"version:        1.14.2", "ServiceAccount kube-system/coredns may not list and watch ServiceImports",
				"missing the RBAC for ServiceImports, the Corefile's multicluster option")
			r := mesh(t, env, framework.UserAdmin, "dns", "status")
			wantOutput(t, r, 1, "no CoreDNS Deployment in namespace kube-system")
		}},
		{"a CoreDNS older than 1.12.2 is refused with what to do", func(t *testing.T) {
			_, rv, _ := corefileOf(t, env)
			old := "registry.k8s.io/coredns/coredns:v1.11.3"
			env.KubectlT(t, dnsImporter, framework.UserAdmin, "-n", "kube-system", "set", "image", "deployment/coredns", "coredns="+old)
			wantOutput(t, dnsCmd(t, env, "enable"), 1, "is CoreDNS 1.11.3, older than 1.12.2", "upgrade CoreDNS first")
			env.KubectlT(t, dnsImporter, framework.UserAdmin, "-n", "kube-system", "set", "image", "deployment/coredns", "coredns="+framework.KubeadmCoreDNSImage)
			if _, after, _ := corefileOf(t, env); after != rv {
				t.Errorf("the ConfigMap changed")
			}
		}},
		{"--dry-run prints the diff and the RBAC, and changes nothing", func(t *testing.T) {
			_, rv, _ := corefileOf(t, env)
			wantOutput(t, dnsCmd(t, env, "enable", "--dry-run"), 0,
				"-    kubernetes cluster.local in-addr.arpa ip6.arpa {\n+    kubernetes cluster.local in-addr.arpa ip6.arpa clusterset.local {",
				"+       multicluster clusterset.local\n", "+       disable denial cluster.local clusterset.local\n",
				"kind: ClusterRole\n", "name: kilo-mesh:coredns-serviceimports", "Dry run: nothing was changed.")
			if _, after, _ := corefileOf(t, env); after != rv {
				t.Errorf("the ConfigMap changed")
			}
			if _, err := north.RbacV1().ClusterRoles().Get(ctx, "kilo-mesh:coredns-serviceimports", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the ClusterRole exists after a dry run: %v", err)
			}
		}},
		{"enable adds the RBAC and the lines, once", func(t *testing.T) {
			r := dnsCmd(t, env, "enable")
			t.Logf("kubectl mesh dns enable:\n%s", r.stdout)
			wantOutput(t, r, 0, "CoreDNS 1.14.2, which has the multicluster option",
				"Created ClusterRole and ClusterRoleBinding kilo-mesh:coredns-serviceimports", "CoreDNS rereads it by itself (its reload plugin)")
			got, rv, record := corefileOf(t, env)
			if got != kubeadmEnabled {
				t.Errorf("the Corefile after enable:\n%s\nwant:\n%s", got, kubeadmEnabled)
			}
			if !strings.Contains(record, `"multicluster":"line"`) || !strings.Contains(record, `"rbac":true`) {
				t.Errorf("record %s", record)
			}
			wantOutput(t, dnsCmd(t, env, "enable"), 0, "nothing to change")
			if _, again, _ := corefileOf(t, env); again != rv {
				t.Errorf("a second enable wrote the ConfigMap")
			}
			r = dnsCmd(t, env, "status")
			t.Logf("kubectl mesh dns status:\n%s", r.stdout)
			wantOutput(t, r, 0, "may list and watch ServiceImports", "changed by dns enable:", "CoreDNS is configured to answer clusterset.local.")
		}},
		{"the real CoreDNS runs that Corefile as its ServiceAccount", func(t *testing.T) {
			kubeconfig, err := env.CoreDNSKubeconfig(ctx, dnsImporter, "kube-system", "coredns", "", dir)
			if err != nil {
				t.Fatal(err)
			}
			if loop, err = framework.NewCoreDNSLoopback(kubeconfig); err != nil {
				t.Fatal(err)
			}
			src, _, _ := corefileOf(t, env)
			running, err := framework.LoopbackCorefile(src, loop)
			if err != nil {
				t.Fatal(err)
			}
			// Ready means its kubernetes plugin has listed ServiceImports.
			if coredns, err = framework.StartCoreDNS(ctx, dir, running, loop, nil, ""); err != nil {
				t.Fatal(err)
			}
		}},
		{"a ClusterSetIP import: A and AAAA per family, SRV per named port", func(t *testing.T) {
			exportWeb(t, env)
			var ips []string
			framework.EventuallyT(t, dnsSettle, "shop/web imported in north with an IP of each family", func() error {
				imp, err := mcs(env, dnsImporter).MulticlusterV1beta1().ServiceImports(dnsNS).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if ips = imp.Spec.IPs; len(ips) != 2 {
					return fmt.Errorf("ips %v", ips)
				}
				return nil
			})
			for _, tc := range []struct {
				qtype dnsmessage.Type
				want  string
			}{{dnsmessage.TypeA, ips[0]}, {dnsmessage.TypeAAAA, ips[1]}} {
				if netip.MustParseAddr(tc.want).Is4() != (tc.qtype == dnsmessage.TypeA) {
					t.Fatalf("the import's ips %v are not IPv4 then IPv6", ips)
				}
				framework.EventuallyT(t, dnsSettle, "web.shop.svc.clusterset.local "+tc.qtype.String(), func() error {
					a := query("web.shop.svc.clusterset.local", tc.qtype)
					if a.RCode != dnsmessage.RCodeSuccess || len(a.Addrs) != 1 || a.Addrs[0].String() != tc.want {
						return fmt.Errorf("answer %s, want %s", a, tc.want)
					}
					return nil
				})
			}
			for port, want := range map[string]uint16{"http": 80, "grpc": 9090} {
				a := query("_"+port+"._tcp.web.shop.svc.clusterset.local", dnsmessage.TypeSRV)
				if len(a.SRV) != 1 || a.SRV[0].Port != want || a.SRV[0].Target != "web.shop.svc.clusterset.local." {
					t.Errorf("SRV of %s: %s, want web.shop.svc.clusterset.local.:%d", port, a, want)
				}
			}
			if a := query("_nope._tcp.web.shop.svc.clusterset.local", dnsmessage.TypeSRV); len(a.SRV) != 0 {
				t.Errorf("SRV of a port the service lacks: %s", a)
			}
		}},
		{"a headless StatefulSet: ready pods, and each by its hostname in its cluster", func(t *testing.T) {
			ips := statefulDB(t, env)
			framework.EventuallyT(t, dnsSettle, "north's slices of shop/db with hostnames and the source cluster", func() error {
				return importedSlices(ctx, env, "db", []string{"db-0", "db-1"})
			})
			want := []netip.Addr{netip.MustParseAddr(ips["db-0"]), netip.MustParseAddr(ips["db-1"])}
			framework.EventuallyT(t, dnsSettle, "db.shop.svc.clusterset.local: the two ready pods", func() error {
				if a := query("db.shop.svc.clusterset.local", dnsmessage.TypeA); a.RCode != dnsmessage.RCodeSuccess || !slices.Equal(a.Addrs, want) {
					return fmt.Errorf("answer %s, want %v", a, want)
				}
				return nil
			})
			for _, pod := range []string{"db-0", "db-1"} {
				a := query(pod+".west.db.shop.svc.clusterset.local", dnsmessage.TypeA)
				if a.RCode != dnsmessage.RCodeSuccess || len(a.Addrs) != 1 || a.Addrs[0].String() != ips[pod] {
					t.Errorf("%s.west.db.shop.svc.clusterset.local: %s, want %s", pod, a, ips[pod])
				}
			}
			for _, name := range []string{"db-2.west.db.shop.svc.clusterset.local", "db-0.north.db.shop.svc.clusterset.local"} {
				if a := query(name, dnsmessage.TypeA); a.RCode != dnsmessage.RCodeNameError {
					t.Errorf("%s (not ready, or not that cluster's): %s, want NXDOMAIN", name, a)
				}
			}
			a := query("_pg._tcp.db.shop.svc.clusterset.local", dnsmessage.TypeSRV)
			if len(a.SRV) != 2 || a.SRV[0].Port != 5432 || !strings.HasPrefix(a.SRV[0].Target, "db-0.west.db.shop.svc.clusterset.local") {
				t.Errorf("SRV of pg: %s, want db-0 and db-1 of west on 5432", a)
			}
		}},
		{"cluster.local names stay north's own", func(t *testing.T) {
			k, err := north.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if a := query("kubernetes.default.svc.cluster.local", dnsmessage.TypeA); len(a.Addrs) != 1 || a.Addrs[0].String() != k.Spec.ClusterIP {
				t.Errorf("kubernetes.default.svc.cluster.local: %s, want north's %s", a, k.Spec.ClusterIP)
			}
			for _, name := range []string{"web.shop.svc.cluster.local", "db.shop.svc.cluster.local", "db-0.db.shop.svc.cluster.local"} {
				if a := query(name, dnsmessage.TypeA); a.RCode != dnsmessage.RCodeNameError {
					t.Errorf("%s exists only in west: %s, want NXDOMAIN", name, a)
				}
			}
		}},
		{"unexport: NXDOMAIN within the conformance bound", func(t *testing.T) {
			start := time.Now()
			if err := mcs(env, dnsExporter).MulticlusterV1beta1().ServiceExports(dnsNS).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			err := framework.Eventually(ctx, 100*time.Millisecond, unexportBound, func(context.Context) error {
				if a := query("web.shop.svc.clusterset.local", dnsmessage.TypeA); a.RCode != dnsmessage.RCodeNameError {
					return fmt.Errorf("answer %s", a)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("web.shop.svc.clusterset.local still answers %s after the unexport: %v", unexportBound, err)
			}
			t.Logf("web.shop.svc.clusterset.local NXDOMAIN %s after the unexport", time.Since(start).Round(time.Millisecond))
		}},
		{"disable gives the Corefile back and removes the RBAC", func(t *testing.T) {
			wantOutput(t, dnsCmd(t, env, "disable", "--dry-run"), 0, "-       multicluster clusterset.local\n", "Would delete ClusterRoleBinding and ClusterRole", "Dry run")
			wantOutput(t, dnsCmd(t, env, "disable"), 0, "Changed the Corefile of ConfigMap kube-system/coredns back", "Deleted ClusterRoleBinding")
			got, _, record := corefileOf(t, env)
			if got != framework.KubeadmCorefile || record != "" {
				t.Errorf("after disable (record %q):\n%s\nwant kubeadm's:\n%s", record, got, framework.KubeadmCorefile)
			}
			if _, err := north.RbacV1().ClusterRoles().Get(ctx, "kilo-mesh:coredns-serviceimports", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the ClusterRole is still there: %v", err)
			}
			wantOutput(t, dnsCmd(t, env, "disable"), 0, "nothing to undo")
			wantOutput(t, dnsCmd(t, env, "status"), 2, "may not list and watch ServiceImports")
			// Restarted on kubeadm's Corefile with kubeadm's RBAC, CoreDNS is
			// ready and answers cluster.local, and clusterset.local no more.
			running, err := framework.LoopbackCorefile(got, loop)
			if err != nil {
				t.Fatal(err)
			}
			if err := coredns.Restart(ctx, running); err != nil {
				t.Fatal(err)
			}
			if a := query("db.shop.svc.clusterset.local", dnsmessage.TypeA); a.RCode == dnsmessage.RCodeSuccess {
				t.Errorf("db.shop.svc.clusterset.local answered after disable: %s", a)
			}
			if a := query("kubernetes.default.svc.cluster.local", dnsmessage.TypeA); len(a.Addrs) != 1 {
				t.Errorf("kubernetes.default.svc.cluster.local after disable: %s", a)
			}
		}},
		{"control: without the RBAC, the enabled Corefile leaves CoreDNS unready", func(t *testing.T) {
			// Why enable grants the right before it writes the Corefile,
			// and disable removes it only after.
			other, err := framework.NewCoreDNSLoopback(loop.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			running, err := framework.LoopbackCorefile(kubeadmEnabled, other)
			if err != nil {
				t.Fatal(err)
			}
			controlDir := t.TempDir()
			wait, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			c, err := framework.StartCoreDNS(wait, controlDir, running, other, nil, "")
			if err == nil {
				_ = c.Stop()
				t.Fatalf("CoreDNS became ready with the multicluster option and no right to list ServiceImports")
			}
			log, _ := os.ReadFile(filepath.Join(controlDir, "coredns.log"))
			if !strings.Contains(string(log), "serviceimports") || !strings.Contains(string(log), "forbidden") {
				t.Errorf("CoreDNS's log does not say ServiceImports are forbidden (%v):\n%s", err, log)
			}
		}},
		{"a Corefile it does not understand is left alone, with the lines to add", func(t *testing.T) {
			two := framework.KubeadmCorefile + "cluster.internal:5353 {\n    kubernetes cluster.internal\n}\n"
			setCorefile(t, env, two)
			_, rv, _ := corefileOf(t, env)
			r := dnsCmd(t, env, "enable")
			wantOutput(t, r, 1, "Left the Corefile of ConfigMap kube-system/coredns and the cluster's RBAC as they are: 2 server blocks have a kubernetes plugin",
				"        multicluster clusterset.local\n", "name: kilo-mesh:coredns-serviceimports")
			if _, after, _ := corefileOf(t, env); after != rv {
				t.Errorf("the ConfigMap changed")
			}
			setCorefile(t, env, framework.KubeadmCorefile)
		}},
		{"without the reload plugin, enable and disable restart CoreDNS", func(t *testing.T) {
			noReload := strings.Replace(framework.KubeadmCorefile, "    reload\n", "", 1)
			setCorefile(t, env, noReload)
			restartedAt := func() string {
				d, err := north.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]
			}
			before := restartedAt()
			wantOutput(t, dnsCmd(t, env, "enable"), 0, "Restarted Deployment kube-system/coredns (as kubectl rollout restart does)")
			enabled := restartedAt()
			if enabled == before {
				t.Errorf("enable did not restart the Deployment's pods")
			}
			wantOutput(t, dnsCmd(t, env, "disable"), 0, "Restarted Deployment kube-system/coredns")
			if restartedAt() == enabled {
				t.Errorf("disable did not restart the Deployment's pods")
			}
			if got, _, _ := corefileOf(t, env); got != noReload {
				t.Errorf("after disable:\n%s\nwant:\n%s", got, noReload)
			}
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.f) {
			t.FailNow()
		}
	}
}

// importedSlices checks north's EndpointSlices of import name: every
// endpoint has a hostname of want, and each slice names west as its source.
func importedSlices(ctx context.Context, env *framework.Env, name string, want []string) error {
	list, err := env.Client(dnsImporter, framework.UserAdmin).DiscoveryV1().EndpointSlices(dnsNS).List(ctx,
		metav1.ListOptions{LabelSelector: mcsv1beta1.LabelServiceName + "=" + name})
	if err != nil {
		return err
	}
	var hosts []string
	for _, s := range list.Items {
		if s.Labels[mcsv1beta1.LabelSourceCluster] != "west" {
			return fmt.Errorf("slice %s has source cluster %q", s.Name, s.Labels[mcsv1beta1.LabelSourceCluster])
		}
		for _, ep := range s.Endpoints {
			hosts = append(hosts, hostname(ep))
		}
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, want) {
		return fmt.Errorf("hostnames %q, want %q", hosts, want)
	}
	return nil
}

func hostname(ep discoveryv1.Endpoint) string {
	if ep.Hostname == nil {
		return ""
	}
	return *ep.Hostname
}
