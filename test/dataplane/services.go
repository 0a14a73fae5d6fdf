package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Multi-cluster services on the bed: Pods whose addresses live on the
// nodes' pods interfaces and answer TCP, Services and ServiceExports made
// with the clusters' own APIs, and the imports read back the same way.

// BackendPort is the TCP port the backends listen on (the Services'
// targetPort).
const BackendPort = 8080

// EnableServices installs the mcs-api CRDs on clusters; every later
// ApplyMesh enables multi-cluster services, and the bed keeps the Ready
// condition of its Nodes fresh, as kubelets would, so that the node
// lifecycle controller never marks their Pods unready.
func (b *Bed) EnableServices(ctx context.Context, clusters ...int) error {
	for _, i := range clusters {
		if err := b.Env.InstallMCSCRDs(ctx, i); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.mcs = true
	b.mu.Unlock()
	for _, i := range clusters {
		if err := b.Env.RenewNodesReady(ctx, i, b.agentNodes(i)...); err != nil {
			return err
		}
	}
	return nil
}

// agentNodes are the names of cluster i's nodes where kg (and so a
// kubelet) runs.
func (b *Bed) agentNodes(i int) []string {
	var names []string
	for _, n := range b.Nodes {
		if n.Cluster == i && n.RunsAgent() {
			names = append(names, n.Name)
		}
	}
	return names
}

func (b *Bed) servicesEnabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mcs
}

// MCS is the mcs-api client of cluster i as the admin.
func (b *Bed) MCS(i int) (mcsclient.Interface, error) {
	return mcsclient.NewForConfig(b.Env.RESTConfig(i, framework.UserAdmin))
}

// CreateNamespaces creates namespace ns on clusters.
func (b *Bed) CreateNamespaces(ctx context.Context, ns string, clusters ...int) error {
	for _, i := range clusters {
		_, err := b.Env.Client(i, framework.UserAdmin).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s on cluster %d: %w", ns, i, err)
		}
	}
	return nil
}

// Export creates on cluster i the Service ns/name (port 80 to the
// backends' port, selecting app=name), unless it exists, and its
// ServiceExport.
func (b *Bed) Export(ctx context.Context, i int, ns, name string) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": name},
		Ports:    []corev1.ServicePort{{Name: "tcp", Port: 80, TargetPort: intstr.FromInt32(BackendPort), Protocol: corev1.ProtocolTCP}},
	}}
	_, err := b.Env.Client(i, framework.UserAdmin).CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) { // exported again
		return fmt.Errorf("creating Service %s/%s on cluster %d: %w", ns, name, i, err)
	}
	mcs, err := b.MCS(i)
	if err != nil {
		return err
	}
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := mcs.MulticlusterV1beta1().ServiceExports(ns).Create(ctx, se, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ServiceExport %s/%s on cluster %d: %w", ns, name, i, err)
	}
	return nil
}

// Unexport deletes ServiceExport ns/name of cluster i (the Service stays).
func (b *Bed) Unexport(ctx context.Context, i int, ns, name string) error {
	mcs, err := b.MCS(i)
	if err != nil {
		return err
	}
	if err := mcs.MulticlusterV1beta1().ServiceExports(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting ServiceExport %s/%s on cluster %d: %w", ns, name, i, err)
	}
	return nil
}

// Import is what cluster i holds of an import: the ServiceImport, its
// derived Service's ClusterIP, and the addresses of the slices the server
// wrote for it.
type Import struct {
	Type      mcsv1beta1.ServiceImportType
	IPs       []string
	ClusterIP string
	Endpoints []string
}

// Imported reads import ns/name on cluster i; a NotFound error while the
// ServiceImport is absent.
func (b *Bed) Imported(ctx context.Context, i int, ns, name string) (*Import, error) {
	mcs, err := b.MCS(i)
	if err != nil {
		return nil, err
	}
	si, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	imp := &Import{Type: si.Spec.Type, IPs: si.Spec.IPs}
	kube := b.Env.Client(i, framework.UserAdmin)
	if d := si.Annotations[services.AnnotationDerivedService]; d != "" {
		svc, err := kube.CoreV1().Services(ns).Get(ctx, d, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("derived Service %s of import %s/%s on cluster %d: %w", d, ns, name, i, err)
		}
		imp.ClusterIP = svc.Spec.ClusterIP
	}
	list, err := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: mcsv1beta1.LabelServiceName + "=" + name})
	if err != nil {
		return nil, err
	}
	for _, es := range list.Items {
		for _, e := range es.Endpoints {
			imp.Endpoints = append(imp.Endpoints, e.Addresses...)
		}
	}
	return imp, nil
}

// Backend is a Pod of the bed: an address on its node's pods interface
// with a TCP server answering "<node> <pod>", and the Pod object.
type Backend struct {
	Node      *Node
	Namespace string
	Pod       string
	Addr      netip.Addr

	ln   net.Listener
	wg   sync.WaitGroup
	once sync.Once
}

// StartBackend makes Pod ns/pod (label app=app) at addr on node n: the
// address and the server first, then the Pod, Ready with its IP, as a
// kubelet reports it once the container runs.
func (b *Bed) StartBackend(ctx context.Context, n *Node, ns, app, pod string, addr netip.Addr) (*Backend, error) {
	if !n.PodCIDR.Contains(addr) {
		return nil, fmt.Errorf("backend %s: %s is outside node %s's pod CIDR %s", pod, addr, n.Name, n.PodCIDR)
	}
	if err := b.underlay.AddAddresses(ctx, n.Namespace, "pods", addr); err != nil {
		return nil, err
	}
	be := &Backend{Node: n, Namespace: ns, Pod: pod, Addr: addr}
	err := framework.InNetns(n.Namespace, func() error {
		var err error
		be.ln, err = net.Listen("tcp", netip.AddrPortFrom(addr, BackendPort).String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("backend %s on %s: %w", pod, n.Name, err)
	}
	be.wg.Go(be.serve)
	_, err = b.Env.CreateReadyPod(ctx, n.Cluster, ns, framework.ReadyPod{Name: pod, Node: n.Name, IP: addr.String(), Labels: map[string]string{"app": app}})
	if err != nil {
		be.close()
		return nil, err
	}
	return be, nil
}

func (be *Backend) serve() {
	for {
		c, err := be.ln.Accept()
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = fmt.Fprintf(c, "%s %s\n", be.Node.Name, be.Pod)
		c.Close()
	}
}

func (be *Backend) close() {
	be.once.Do(func() {
		be.ln.Close()
		be.wg.Wait()
	})
}

// StopBackend ends the backend as a terminated Pod: its server and address
// go, then its Pod object.
func (b *Bed) StopBackend(ctx context.Context, be *Backend) error {
	be.close()
	if err := b.underlay.RemoveAddresses(ctx, be.Node.Namespace, "pods", be.Addr); err != nil {
		return err
	}
	err := b.Env.Client(be.Node.Cluster, framework.UserAdmin).CoreV1().Pods(be.Namespace).Delete(ctx, be.Pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", be.Namespace, be.Pod, err)
	}
	return nil
}

// DialTCP connects from pod address from to dst, inside from's node
// namespace, and returns the line the server wrote.
func DialTCP(from Endpoint, dst netip.AddrPort, timeout time.Duration) (string, error) {
	var answer string
	err := framework.InNetns(from.Node.Namespace, func() error {
		d := net.Dialer{Timeout: timeout, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from.Addr, 0))}
		c, err := d.Dial("tcp", dst.String())
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		answer, err = bufio.NewReader(c).ReadString('\n')
		return err
	})
	return strings.TrimSpace(answer), err
}
