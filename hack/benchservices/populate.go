package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func namespaceOf(c config, i int) string { return fmt.Sprintf("bench-%d", i%c.namespaces) }

func serviceName(i int) string { return fmt.Sprintf("svc-%04d", i) }

// podCIDR is member i's declared pod network; every endpoint of the
// exporter is inside its own.
func podCIDR(i int) string { return fmt.Sprintf("10.1%d.0.0/16", i) }

// address is endpoint k of Service i, inside the exporter's podCIDR.
func address(i, k int) string { return fmt.Sprintf("10.1%d.%d.%d", exporter, i/25, (i%25)*10+k) }

// sourceSlice is the exported Service's own EndpointSlice, as a
// controller other than the mesh's writes it for a selector-less Service.
func sourceSlice(c config, i int) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespaceOf(c, i), Name: serviceName(i) + "-src", Labels: map[string]string{
			discoveryv1.LabelServiceName: serviceName(i), discoveryv1.LabelManagedBy: "bench.example.com"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(8080))}},
	}
	for k := range c.endpoints {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{address(i, k)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return es
}

// populate creates the namespaces on every member, the mcs-api CRDs, and
// the exported Services with their EndpointSlices and ServiceExports on
// the exporter.
func (b *bench) populate(ctx context.Context) error {
	for _, m := range members() {
		if err := b.env.InstallMCSCRDs(ctx, m); err != nil {
			return err
		}
		for n := range b.namespaces {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(b.config, n)}}
			if _, err := b.kube[m].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating namespace %s on cluster %d: %w", ns.Name, m, err)
			}
		}
	}
	work := make(chan int)
	errs := make(chan error, b.services)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				errs <- b.export(ctx, i)
			}
		})
	}
	for i := range b.services {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// export creates Service i, its EndpointSlice and its ServiceExport.
func (b *bench) export(ctx context.Context, i int) error {
	ns, name := namespaceOf(b.config, i), serviceName(i)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	if _, err := b.kube[exporter].CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Service %s/%s: %w", ns, name, err)
	}
	if _, err := b.kube[exporter].DiscoveryV1().EndpointSlices(ns).Create(ctx, sourceSlice(b.config, i), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the EndpointSlice of %s/%s: %w", ns, name, err)
	}
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := b.mcs[exporter].MulticlusterV1beta1().ServiceExports(ns).Create(ctx, se, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ServiceExport of %s/%s: %w", ns, name, err)
	}
	return nil
}

// createMesh creates the mesh of the three members, services disabled.
func (b *bench) createMesh(ctx context.Context) error {
	host := b.kube[framework.HostCluster]
	if _, err := host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: meshNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var m strings.Builder
	fmt.Fprintf(&m, "apiVersion: mesh.kilo.squat.ai/v1alpha1\nkind: ClusterMesh\nmetadata: {name: %s, namespace: %s}\nspec:\n  multiClusterServices: Disabled\n  clusters:\n",
		meshName, meshNamespace)
	for _, i := range members() {
		secret := fmt.Sprintf("c%d-kubeconfig", i)
		if _, err := b.env.CreateKubeconfigSecret(ctx, meshNamespace, secret, i, framework.UserAdmin); err != nil {
			return err
		}
		fmt.Fprintf(&m, "  - name: c%d\n    kubeconfigSecretRef: {name: %s}\n    podCIDRs: [%q]\n    wireguardCIDR: 10.%d.0.0/16\n",
			i, secret, podCIDR(i), 100+i)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(m.String()), &obj.Object); err != nil {
		return err
	}
	u, err := b.meshes().Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the mesh: %w", err)
	}
	b.uid = u.GetUID()
	return nil
}

func (b *bench) meshes() dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(b.env.RESTConfig(framework.HostCluster, framework.UserAdmin)).
		Resource(framework.ClusterMeshGVR).Namespace(meshNamespace)
}

// setServices turns the mesh's multi-cluster services on or off.
func (b *bench) setServices(ctx context.Context, value string) error {
	patch := fmt.Sprintf(`{"spec":{"multiClusterServices":%q}}`, value)
	if _, err := b.meshes().Patch(ctx, meshName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting multiClusterServices %s: %w", value, err)
	}
	return nil
}
