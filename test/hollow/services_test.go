//go:build e2e

package hollow

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// servicesObjects: the multi-cluster services writes (create, status,
// update at a resourceVersion read live, deletion with the UID) and the
// labelled lists of the services caches and removals.
func servicesObjects(ctx context.Context, m *member) error {
	const ns = "fid"
	core := m.kube.CoreV1()
	_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	m.note("create namespace: %s", outcome(err))
	labels := map[string]string{meshLabel: "fidelity"}

	exports := m.mcs.MulticlusterV1beta1().ServiceExports(ns)
	ex, err := exports.Create(ctx, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	m.note("create a ServiceExport: %s", outcome(err))
	if err != nil {
		return nil
	}
	ex.Status.Conditions = []metav1.Condition{{Type: "Valid", Status: metav1.ConditionTrue, Reason: "Exported", Message: "fidelity", LastTransitionTime: metav1.Now()}}
	ex, err = exports.UpdateStatus(ctx, ex, metav1.UpdateOptions{FieldManager: fieldManager})
	m.note("its status: %s, %d conditions", outcome(err), len(ex.Status.Conditions))
	ex.Labels = map[string]string{"user": "label"}
	ex.Status.Conditions = nil
	ex, err = exports.Update(ctx, ex, metav1.UpdateOptions{})
	m.note("an update of the export without status: %s, %d conditions kept, generation %d", outcome(err), len(ex.Status.Conditions), ex.Generation)

	imports := m.mcs.MulticlusterV1beta1().ServiceImports(ns)
	si, err := imports.Create(ctx, &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}},
		metav1.CreateOptions{FieldManager: fieldManager})
	m.note("create a ServiceImport: %s", outcome(err))
	if err != nil {
		return nil
	}
	si.Status.Clusters = []mcsv1beta1.ClusterStatus{{Cluster: "a"}, {Cluster: "b"}}
	si, err = imports.UpdateStatus(ctx, si, metav1.UpdateOptions{FieldManager: fieldManager})
	m.note("its status: %s, %d clusters", outcome(err), len(si.Status.Clusters))

	svcs := core.Services(ns)
	svc, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "derived-0123456789", Labels: labels},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}, metav1.CreateOptions{FieldManager: fieldManager})
	m.note("create a derived Service: %s, %d ClusterIPs allocated", outcome(err), len(svc.Spec.ClusterIPs))
	if err != nil {
		return nil
	}
	port := int32(8080)
	_, err = m.kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "imported-web-a", Labels: map[string]string{meshLabel: "fidelity", discoveryv1.LabelManagedBy: "kilo-mesh-apiserver.mesh.kilo.squat.ai", discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.8.0.5"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: &port}},
	}, metav1.CreateOptions{FieldManager: fieldManager})
	m.note("create an EndpointSlice: %s", outcome(err))

	sel := metav1.ListOptions{LabelSelector: meshLabel + "=fidelity", Limit: 500}
	sl, err := svcs.List(ctx, sel)
	m.note("Services by the mesh's label: %s %d", outcome(err), len(sl.Items))
	el, err := m.kube.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelManagedBy + "=kilo-mesh-apiserver.mesh.kilo.squat.ai"})
	m.note("EndpointSlices by managed-by, every namespace: %s %d", outcome(err), len(el.Items))
	il, err := m.mcs.MulticlusterV1beta1().ServiceImports(metav1.NamespaceAll).List(ctx, sel)
	m.note("ServiceImports by the mesh's label, every namespace: %s %d", outcome(err), len(il.Items))

	live, err := svcs.Get(ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	stale := live.DeepCopy()
	live.Spec.Ports[0].Port = 81
	updated, err := svcs.Update(ctx, live, metav1.UpdateOptions{FieldManager: fieldManager})
	m.note("update the Service read live: %s, port %d, ClusterIP kept %v", outcome(err), updated.Spec.Ports[0].Port, updated.Spec.ClusterIP == svc.Spec.ClusterIP)
	_, err = svcs.Update(ctx, stale, metav1.UpdateOptions{FieldManager: fieldManager})
	m.note("update it at a stale resourceVersion: %s", outcome(err))
	wrong := types.UID("00000000-0000-0000-0000-000000000000")
	err = imports.Delete(ctx, "web", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	m.note("delete the import with another UID: %s", outcome(err))
	err = imports.Delete(ctx, "web", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &si.UID}})
	m.note("delete the import with its UID: %s", outcome(err))
	_, err = m.mcs.MulticlusterV1beta1().ServiceImports("nothere").Create(ctx, &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, Ports: []mcsv1beta1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	m.note("create an import in a missing namespace: %s", outcome(err))
	return nil
}

// refusals: what a member refuses the server.
func refusals(ctx context.Context, m *member) error {
	cfg := rest.CopyConfig(m.cfg)
	cfg.BearerToken, cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = "not-a-token", nil, nil, "", ""
	bad, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = bad.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	m.note("a token the member does not know: %s", outcome(err))
	_, err = m.peers.Patch(ctx, "fid-none", types.StrategicMergePatchType, []byte(`{"spec":{}}`), metav1.PatchOptions{})
	m.note("a strategic merge patch of a missing Peer: %s", outcome(err))
	if _, err := m.peers.Apply(ctx, "fid-d", peer("fid-d", "k", "", ""), metav1.ApplyOptions{FieldManager: fieldManager}); err != nil {
		return err
	}
	_, err = m.peers.Patch(ctx, "fid-d", types.StrategicMergePatchType, []byte(`{"spec":{"publicKey":"x"}}`), metav1.PatchOptions{})
	m.note("a strategic merge patch of a Peer: %s", outcome(err))
	_ = m.peers.Delete(ctx, "fid-d", metav1.DeleteOptions{})
	patch := `{"metadata":{"labels":{"fidelity":"yes"}}}`
	_, err = m.kube.CoreV1().Nodes().Patch(ctx, "c0-n00002", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	m.note("a strategic merge patch of a Node: %s", outcome(err))
	_, err = m.kube.CoreV1().Nodes().Get(ctx, "nothere", metav1.GetOptions{})
	m.note("get a missing Node: %s", outcome(err))
	return nil
}
