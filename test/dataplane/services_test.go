//go:build dataplane

package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/dataplane"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Cluster-1 imports what cluster-2 exports; the host, cluster-0, is not
// in this mesh (its server identity has no services rights there).
const (
	importer = 1
	exporter = 2
	svcNS    = "shop"
	svcName  = "echo"
	// svcDNSName is the import's name in the KEP's zone.
	svcDNSName = svcName + "." + svcNS + ".svc.clusterset.local"
	// dialTimeout bounds one connection attempt; refusals come at once.
	dialTimeout = 500 * time.Millisecond
	// follow bounds how long traffic may take to follow a change.
	follow = 30 * time.Second
)

// TestServicesDataplane proves with TCP connections that a multi-cluster
// service carries traffic: a pod of cluster-2 is exported; in cluster-1 a
// stand-in for kube-proxy turns the derived Service's ClusterIP into DNAT
// rules to the endpoints it reads from cluster-1's EndpointSlices (which
// only the server writes there), and a client pod resolves the service's
// clusterset.local name through cluster-1's CoreDNS (configured by kubectl
// mesh dns enable) and reaches cluster-2's pod at that address over the
// WireGuard Peers of the mesh. The pod moves; traffic follows. The export
// goes; the name, the import and the route go.
func TestServicesDataplane(t *testing.T) {
	b := dataplane.StartT(t)
	ctx := context.Background()
	clientNode := b.Node(fmt.Sprintf("c%d-a1", importer))
	client := dataplane.Endpoint{Node: clientNode, Addr: clientNode.Pod}
	first, second := b.Node(fmt.Sprintf("c%d-a1", exporter)), b.Node(fmt.Sprintf("c%d-a2", exporter))
	var (
		proxy   *dataplane.KubeProxy
		dns     *dataplane.DNS
		backend *dataplane.Backend
		service netip.AddrPort // the import's IP and port in cluster-1
	)
	// Before the bed stops (cleanups run last first).
	t.Cleanup(func() {
		if dns != nil {
			if err := dns.Stop(); err != nil {
				t.Errorf("stopping CoreDNS: %v", err)
			}
		}
		if proxy == nil {
			return
		}
		if err := proxy.Stop(context.Background()); err != nil {
			t.Errorf("stopping the kube-proxy stand-in: %v", err)
		}
	})

	steps := []struct {
		name string
		f    func(t *testing.T)
	}{
		{"an export of cluster-2 is imported in cluster-1 with a ClusterSetIP", func(t *testing.T) {
			if err := b.EnableServices(ctx, importer, exporter); err != nil {
				t.Fatal(err)
			}
			if err := b.ApplyMesh(ctx, importer, exporter); err != nil {
				t.Fatal(err)
			}
			if err := b.CreateNamespaces(ctx, svcNS, importer, exporter); err != nil {
				t.Fatal(err)
			}
			var err error
			if backend, err = b.StartBackend(ctx, first, svcNS, svcName, "echo-1", podAddr(first, 20)); err != nil {
				t.Fatal(err)
			}
			if err := b.Export(ctx, exporter, svcNS, svcName); err != nil {
				t.Fatal(err)
			}
			took := framework.EventuallyT(t, follow, "the import in cluster-1", func() error {
				imp, err := b.Imported(ctx, importer, svcNS, svcName)
				switch {
				case err != nil:
					return err
				case imp.Type != mcsv1beta1.ClusterSetIP || imp.ClusterIP == "" || !slices.Equal(imp.IPs, []string{imp.ClusterIP}):
					return fmt.Errorf("type %s, ips %v, derived ClusterIP %q", imp.Type, imp.IPs, imp.ClusterIP)
				case !slices.Equal(imp.Endpoints, []string{backend.Addr.String()}):
					return fmt.Errorf("endpoints %v, want %s", imp.Endpoints, backend.Addr)
				}
				service = netip.AddrPortFrom(netip.MustParseAddr(imp.ClusterIP), 80)
				return nil
			})
			t.Logf("cluster-1 imported %s/%s at %s, endpoint %s, %s after the export", svcNS, svcName, service, backend.Addr, took.Round(time.Millisecond))
		}},
		{"a client of cluster-1 resolves the name and reaches the pod of cluster-2 at it", func(t *testing.T) {
			var err error
			if dns, err = b.StartDNS(ctx, clientNode); err != nil {
				t.Fatal(err)
			}
			resolved, err := dns.Resolve(svcDNSName)
			if err != nil {
				t.Fatal(err)
			}
			if resolved != service.Addr() {
				t.Fatalf("%s resolves to %s in %s, the import's IP is %s", svcDNSName, resolved, clientNode.Name, service.Addr())
			}
			service = netip.AddrPortFrom(resolved, 80)
			t.Logf("%s resolves to %s through cluster-1's CoreDNS in %s", svcDNSName, resolved, clientNode.Name)
			if proxy, err = b.StartKubeProxy(ctx, clientNode); err != nil {
				t.Fatal(err)
			}
			// The first connection waits for the Peers and the first handshakes.
			took, _ := reachedBy(t, proxy, client, service, backend, converge)
			r, _, _ := proxy.Applied(svcNS, services.DerivedServiceName(svcNS, svcName), 80)
			if want := []netip.AddrPort{netip.AddrPortFrom(backend.Addr, dataplane.BackendPort)}; !slices.Equal(r.Endpoints, want) {
				t.Errorf("the stand-in sends %s to %v, want %v", service, r.Endpoints, want)
			}
			t.Logf("%s reached %s/%s through %s %s after the stand-in started", client, backend.Node.Name, backend.Pod, service, took.Round(time.Millisecond))
		}},
		{"the pod moves to another node: the slices of cluster-1 and traffic follow", func(t *testing.T) {
			var rules, traffic []time.Duration
			for k := range runs(t) {
				to := []*dataplane.Node{second, first}[k%2] // back and forth, a new IP each time
				start := time.Now()
				moved, err := b.StartBackend(ctx, to, svcNS, svcName, fmt.Sprintf("echo-%d", k+2), podAddr(to, 21+byte(k)))
				if err != nil {
					t.Fatal(err)
				}
				if err := b.StopBackend(ctx, backend); err != nil {
					t.Fatal(err)
				}
				backend = moved
				_, failed := reachedBy(t, proxy, client, service, backend, follow)
				took := time.Since(start)
				want := []netip.AddrPort{netip.AddrPortFrom(moved.Addr, dataplane.BackendPort)}
				var rulesAt time.Time
				framework.EventuallyT(t, follow, "the stand-in's rules to the moved pod only", func() error {
					r, _, at := proxy.Applied(svcNS, services.DerivedServiceName(svcNS, svcName), 80)
					if !slices.Equal(r.Endpoints, want) {
						return fmt.Errorf("the stand-in sends %s to %v, want %v", service, r.Endpoints, want)
					}
					rulesAt = at
					return nil
				})
				imp, err := b.Imported(ctx, importer, svcNS, svcName)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(imp.Endpoints, []string{moved.Addr.String()}) {
					t.Errorf("cluster-1's slices hold %v, want only %s", imp.Endpoints, moved.Addr)
				}
				rules, traffic = append(rules, rulesAt.Sub(start)), append(traffic, took)
				t.Logf("pod moved to %s (%s): the stand-in's rules followed cluster-1's slices %s after the move, traffic %s after it; failed connections on the way: %q",
					moved.Node.Name, moved.Addr, rulesAt.Sub(start).Round(time.Millisecond), took.Round(time.Millisecond), failed)
			}
			t.Logf("pod moves, %d runs: the stand-in's rules (cluster-1's slices) followed in %s; traffic in %s", len(traffic), medianMax(rules), medianMax(traffic))
		}},
		{"unexport: the import and the route go", func(t *testing.T) {
			var imports, routes []time.Duration
			for k := range runs(t) {
				if k > 0 { // exported again, and reached, before the next unexport
					if err := b.Export(ctx, exporter, svcNS, svcName); err != nil {
						t.Fatal(err)
					}
					imp, err := importedAt(ctx, b, follow)
					if err != nil {
						t.Fatal(err)
					}
					// The new import's address, by its name.
					if err := dns.ResolveAs(ctx, svcDNSName, netip.MustParseAddr(imp.ClusterIP), follow); err != nil {
						t.Fatal(err)
					}
					service = netip.AddrPortFrom(netip.MustParseAddr(imp.ClusterIP), 80)
					reachedBy(t, proxy, client, service, backend, follow)
				}
				importGone, routeGone, lastErr := unexport(t, b, proxy, client, service)
				framework.EventuallyT(t, follow, svcDNSName+" NXDOMAIN after the unexport", func() error {
					if a, err := dns.Query(svcDNSName, dnsmessage.TypeA); err != nil || a.RCode != dnsmessage.RCodeNameError {
						return fmt.Errorf("answer %v (%v)", a, err)
					}
					return nil
				})
				imports, routes = append(imports, importGone), append(routes, routeGone)
				t.Logf("unexported: the import left cluster-1 %s after, the route %s after (%v)",
					importGone.Round(time.Millisecond), routeGone.Round(time.Millisecond), lastErr)
			}
			t.Logf("unexports, %d runs: the import left cluster-1 in %s; the route in %s", len(routes), medianMax(imports), medianMax(routes))
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.f) {
			t.FailNow()
		}
	}
}

// podAddr is host h of node n's pod CIDR.
func podAddr(n *dataplane.Node, h byte) netip.Addr {
	a := n.PodCIDR.Masked().Addr().As4()
	a[3] += h
	return netip.AddrFrom4(a)
}

// importedAt waits until cluster-1 holds the import with a ClusterIP and
// endpoints.
func importedAt(ctx context.Context, b *dataplane.Bed, timeout time.Duration) (*dataplane.Import, error) {
	var imp *dataplane.Import
	err := framework.Eventually(ctx, 20*time.Millisecond, timeout, func(ctx context.Context) error {
		var err error
		if imp, err = b.Imported(ctx, importer, svcNS, svcName); err != nil {
			return err
		}
		if imp.ClusterIP == "" || len(imp.Endpoints) == 0 {
			return fmt.Errorf("ClusterIP %q, endpoints %v", imp.ClusterIP, imp.Endpoints)
		}
		return nil
	})
	return imp, err
}

// unexport deletes the export and returns how long the import took to
// leave cluster-1 and the route (the stand-in's rules, and connections)
// to go; then it checks that every connection fails for two seconds.
func unexport(t *testing.T, b *dataplane.Bed, proxy *dataplane.KubeProxy, client dataplane.Endpoint, service netip.AddrPort) (importGone, routeGone time.Duration, lastErr error) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	if err := b.Unexport(ctx, exporter, svcNS, svcName); err != nil {
		t.Fatal(err)
	}
	err := framework.Eventually(ctx, 20*time.Millisecond, follow, func(ctx context.Context) error {
		if importGone == 0 {
			if _, err := b.Imported(ctx, importer, svcNS, svcName); apierrors.IsNotFound(err) {
				importGone = time.Since(start)
			}
		}
		if routeGone == 0 {
			if _, ok, _ := proxy.Applied(svcNS, services.DerivedServiceName(svcNS, svcName), 80); !ok {
				if _, lastErr = dataplane.DialTCP(client, service, dialTimeout); lastErr != nil {
					routeGone = time.Since(start)
				}
			}
		}
		if importGone == 0 || routeGone == 0 {
			return fmt.Errorf("import gone after %s, route gone after %s", importGone, routeGone)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if answer, err := dataplane.DialTCP(client, service, dialTimeout); err == nil {
			t.Fatalf("%s still answered by %q after the unexport", service, answer)
		}
	}
	return importGone, routeGone, lastErr
}

// medianMax summarises durations.
func medianMax(ds []time.Duration) string {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return fmt.Sprintf("median %s, max %s", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}

// reachedBy connects from client to service until be answers, for at most
// timeout, and returns how long that took from its call and what the
// failed attempts met.
func reachedBy(t *testing.T, proxy *dataplane.KubeProxy, client dataplane.Endpoint, service netip.AddrPort, be *dataplane.Backend, timeout time.Duration) (time.Duration, []string) {
	t.Helper()
	start := time.Now()
	want := be.Node.Name + " " + be.Pod
	var last string
	var failed []string
	err := framework.Eventually(context.Background(), 20*time.Millisecond, timeout, func(context.Context) error {
		answer, err := dataplane.DialTCP(client, service, dialTimeout)
		defer func() {
			if err != nil || answer != want {
				failed = append(failed, last)
			}
		}()
		switch {
		case err != nil:
			last = err.Error()
			return err
		case answer != want:
			last = answer
			return fmt.Errorf("answered by %q, want %q", answer, want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s -> %s: not answered by %s within %s: %v (last: %s)\n%s", client, service, strings.Fields(want)[0], timeout, err, last, proxy.Describe(context.Background()))
	}
	return time.Since(start), failed
}
