//go:build integration

package clusters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// servicesInformers are the services informers of c that run or ran.
func (c *cluster) servicesInformers() []cache.SharedIndexInformer {
	c.mu.Lock()
	s := c.svc
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	out := []cache.SharedIndexInformer{s.namespaces, s.exports, s.imports, s.writtenServices, s.writtenSlices}
	s.exported.mu.Lock()
	defer s.exported.mu.Unlock()
	for _, sel := range []*selection_{s.exported.cur, s.exported.next} {
		if sel != nil {
			out = append(out, sel.services)
			if sel.slices != nil {
				out = append(out, sel.slices)
			}
		}
	}
	return out
}

// TestServicesCaches runs the services caches against real kube-apiservers:
// they start only for a mesh with services enabled on a cluster serving the
// mcs-api CRDs, keep exported Services and their slices but not the others,
// report a cluster over a limit instead of cutting it, and one whose
// identity lacks the services rights as such.
func TestServicesCaches(t *testing.T) {
	env := framework.StartT(t, framework.Options{Clusters: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := &harness{t: t, env: env, ctx: ctx}
	if err := env.InstallMCSCRDs(ctx, member1); err != nil {
		t.Fatal(err)
	}

	t.Run("exported services only", h.testServicesExportedOnly)
	t.Run("export limit", h.testServicesExportLimit)
	t.Run("endpoints limit", h.testServicesEndpointsLimit)
	t.Run("a member without its services rights", h.testServicesForbidden)
}

// servicesMesh is a mesh of the host (no mcs-api CRDs) and member 1.
func (h *harness) servicesMesh(t *testing.T, enabled bool) *meshv1alpha1.ClusterMesh {
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", h.kubeconfig(member1, framework.UserAdmin))
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("one", "member-1"))
	if enabled {
		mesh.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
	}
	return mesh
}

// exportService creates, in a new namespace of member 1, a Service, its
// EndpointSlice of n endpoints and, if export, its ServiceExport.
func (h *harness) exportService(t *testing.T, name string, n int, export bool) string {
	t.Helper()
	ns, err := h.env.NewNamespaceOn(h.ctx, member1, "svc")
	if err != nil {
		t.Fatal(err)
	}
	kube := h.env.Client(member1, framework.UserAdmin)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if _, err := kube.CoreV1().Services(ns).Create(h.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns,
		Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "test"}},
		AddressType: discoveryv1.AddressTypeIPv4}
	for i := range n {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.0.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To("node-a")})
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(h.ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if export {
		h.createExport(t, ns, name)
	}
	return ns
}

func (h *harness) createExport(t *testing.T, ns, name string) {
	t.Helper()
	mcs := mcsclient.NewForConfigOrDie(h.env.RESTConfig(member1, framework.UserAdmin))
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := mcs.MulticlusterV1beta1().ServiceExports(ns).Create(h.ctx, se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func servicesOf(m *Manager, mesh *meshv1alpha1.ClusterMesh, cluster string) (*ServicesState, error) {
	st := m.Snapshot(mesh)[cluster]
	if st.Services == nil {
		return nil, fmt.Errorf("%s: no services state", cluster)
	}
	return st.Services, nil
}

func (h *harness) testServicesExportedOnly(t *testing.T) {
	disabled := h.servicesMesh(t, false)
	m, changes := h.startManager(t)
	m.Follow(disabled)
	framework.EventuallyT(t, 30*time.Second, "clusters usable", allUsable(m, disabled))
	for name, st := range m.Snapshot(disabled) {
		if st.Services != nil {
			t.Errorf("%s: services state %+v for a mesh without services", name, st.Services)
		}
	}

	exported := h.exportService(t, "shop", 2, true)
	unexported := h.exportService(t, "private", 2, false)
	mesh := h.servicesMesh(t, true)
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "services synced on member 1", func() error {
		st, err := servicesOf(m, mesh, "one")
		switch {
		case err != nil:
			return err
		case !st.Synced || st.Reason != "":
			return fmt.Errorf("synced=%v reason=%q err=%q", st.Synced, st.Reason, st.LastError)
		}
		return nil
	})
	framework.EventuallyT(t, 10*time.Second, "the host says it lacks the CRDs", func() error {
		if st, err := servicesOf(m, mesh, "host"); err != nil || st.Reason != memberaccess.ErrMCSCRDMissing {
			return fmt.Errorf("host services state %+v, %v; want reason %s", st, err, memberaccess.ErrMCSCRDMissing)
		}
		return nil
	})
	st, _ := servicesOf(m, mesh, "one")
	if !slices.Contains(st.Namespaces, exported) || !slices.Contains(st.Namespaces, unexported) {
		t.Errorf("namespaces %v lack %s or %s", st.Namespaces, exported, unexported)
	}
	if len(st.Exports) != 1 || st.Exports[0].Namespace != exported {
		t.Errorf("exports %v, want only %s/shop", st.Exports, exported)
	}
	for _, svc := range st.Services {
		if svc.Namespace == unexported {
			t.Errorf("unexported Service %s/%s is cached", svc.Namespace, svc.Name)
		}
	}
	if len(st.Services) != 1 || len(st.EndpointSlices) != 1 {
		t.Fatalf("services %d, slices %d; want the exported one of each", len(st.Services), len(st.EndpointSlices))
	}
	if es := st.EndpointSlices[0]; es.Namespace != exported || len(es.Endpoints) != 2 || es.Endpoints[0].NodeName != nil || len(es.ManagedFields) != 0 {
		t.Errorf("cached slice %+v: want the exported one, slimmed", es)
	}

	// Exporting the other Service brings it and its slice in, and tells the mesh.
	changes.reset()
	start := time.Now()
	h.createExport(t, unexported, "private")
	framework.EventuallyT(t, 10*time.Second, "change reported", changes.seen(meshKey(mesh)))
	took := framework.EventuallyT(t, 15*time.Second, "the new export's Service and slice cached", func() error {
		st, err := servicesOf(m, mesh, "one")
		if err != nil || !st.Synced || len(st.Services) != 2 || len(st.EndpointSlices) != 2 {
			return fmt.Errorf("state %+v, %v", st, err)
		}
		return nil
	})
	t.Logf("a new export's Service cached %s after the export (reselection included, %s since its creation)", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Disabling services stops the caches.
	off := mesh.DeepCopy()
	off.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesDisabled
	m.Follow(off)
	framework.EventuallyT(t, 15*time.Second, "services caches stopped", func() error {
		if st := m.Snapshot(off)["one"]; st.Services != nil {
			return errors.New("services state still reported")
		}
		return nil
	})
}

func (h *harness) testServicesExportLimit(t *testing.T) {
	mesh := h.servicesMesh(t, true)
	m, _ := h.startManager(t, func(c *Config) { c.MaxServiceExports = 2 })
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "services synced", func() error {
		if st, err := servicesOf(m, mesh, "one"); err != nil || !st.Synced {
			return fmt.Errorf("%+v %v", st, err)
		}
		return nil
	})
	// The namespaces of earlier subtests may hold exports: count from there.
	st, _ := servicesOf(m, mesh, "one")
	for i := len(st.Exports); i <= 2; i++ {
		h.exportService(t, fmt.Sprintf("flood%d", i), 1, true)
	}
	framework.EventuallyT(t, 30*time.Second, "over the export limit", func() error {
		st, err := servicesOf(m, mesh, "one")
		if err != nil || st.Synced || st.Reason != memberaccess.ErrTooManyServiceExports {
			return fmt.Errorf("%+v %v; want not synced, reason %s", st, err, memberaccess.ErrTooManyServiceExports)
		}
		return nil
	})
	if nodes := m.Snapshot(mesh)["one"]; usable(nodes) != nil {
		t.Errorf("the services limit made the cluster's Nodes and Peers unusable: %v", usable(nodes))
	}
}

func (h *harness) testServicesEndpointsLimit(t *testing.T) {
	mesh := h.servicesMesh(t, true)
	m, _ := h.startManager(t, func(c *Config) { c.MaxEndpointsPerService = 3 })
	// Earlier subtests' exports have at most 2 endpoints each.
	h.exportService(t, "giant", 4, true)
	m.Follow(mesh)
	framework.EventuallyT(t, 30*time.Second, "over the endpoints limit", func() error {
		st, err := servicesOf(m, mesh, "one")
		if err != nil || st.Synced || st.Reason != memberaccess.ErrTooManyEndpoints {
			return fmt.Errorf("%+v %v; want not synced, reason %s", st, err, memberaccess.ErrTooManyEndpoints)
		}
		return nil
	})
}
