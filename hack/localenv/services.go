package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The services demo: cluster-1 ("west") exports Service demo/hello, two
// Ready Pods behind it; every cluster gets namespace demo (a namespace is
// imported only where it exists) and the mcs-api CRDs. The host, cluster-0,
// also gets the server's services rights as an install gives them
// (artifacts/components/host-services), and the demo's grant names demo in
// serviceNamespaces, so it imports too. Every cluster has kubeadm's CoreDNS
// objects, which kubectl mesh dns configures.
const (
	demoService  = "hello"
	demoExporter = 1
	demoPods     = 2
)

// setupServicesDemo enables services on ClusterMesh demo/demo (as
// tenant-a, who created it) and exports the demo Service from west.
func setupServicesDemo(ctx context.Context, env *framework.Env) error {
	if err := installHostServices(ctx, env); err != nil {
		return err
	}
	for i := range env.NumClusters() {
		if err := env.InstallMCSCRDs(ctx, i); err != nil {
			return err
		}
		_, err := env.Client(i, framework.UserAdmin).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s on %s: %w", demoNamespace, env.Cluster(i).Name, err)
		}
	}
	// What kubeadm installs for the cluster's DNS, for kubectl mesh dns to
	// configure; no kubelet runs its pods.
	for i := range env.NumClusters() {
		if err := env.InstallKubeadmCoreDNS(ctx, i, framework.KubeadmCoreDNSImage); err != nil {
			return err
		}
	}
	log.Printf("created kubeadm's CoreDNS objects on every cluster (Deployment kube-system/coredns, %s; no pods run), for kubectl mesh dns", framework.KubeadmCoreDNSImage)
	if _, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserTenantA, "patch", "clustermesh", "demo", "-n", demoNamespace,
		"--type=merge", "-p", `{"spec":{"multiClusterServices":"Enabled"}}`); err != nil {
		return fmt.Errorf("enabling services on ClusterMesh demo/demo: %w: %s", err, stderr)
	}
	kube := env.Client(demoExporter, framework.UserAdmin)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: demoService, Namespace: demoNamespace}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": demoService},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
	}}
	if _, err := kube.CoreV1().Services(demoNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Service %s/%s on %s: %w", demoNamespace, demoService, env.Cluster(demoExporter).Name, err)
	}
	// No kubelet runs: each Pod gets an IP of its node's pod CIDR and
	// readiness through the status subresource, as a kubelet would set them.
	for k := 1; k <= demoPods; k++ {
		p := framework.ReadyPod{Name: fmt.Sprintf("%s-%d", demoService, k), Node: sampleNodeName(env, demoExporter, k),
			IP: fmt.Sprintf("10.%d.%d.10", 42+10*demoExporter, k), Labels: map[string]string{"app": demoService}}
		if _, err := env.CreateReadyPod(ctx, demoExporter, demoNamespace, p); err != nil {
			return err
		}
	}
	mcs, err := mcsclient.NewForConfig(env.RESTConfig(demoExporter, framework.UserAdmin))
	if err != nil {
		return err
	}
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: demoService, Namespace: demoNamespace}}
	if _, err := mcs.MulticlusterV1beta1().ServiceExports(demoNamespace).Create(ctx, se, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ServiceExport %s/%s on %s: %w", demoNamespace, demoService, env.Cluster(demoExporter).Name, err)
	}
	log.Printf("exported Service %s/%s (%d Ready Pods) from %s; services enabled on ClusterMesh demo/demo",
		demoNamespace, demoService, demoPods, meshName(demoExporter))
	return nil
}

// installHostServices gives the server's ServiceAccount its services
// rights on the host from the file the install's component and chart are
// generated with, as an administrator turning them on would.
func installHostServices(ctx context.Context, env *framework.Env) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	path := filepath.Join(root, "artifacts", "components", "host-services", "rbac.yaml")
	if _, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "apply", "-f", path); err != nil {
		return fmt.Errorf("applying %s on %s: %w: %s", path, env.Cluster(framework.HostCluster).Name, err, stderr)
	}
	log.Printf("gave kilo-mesh-apiserver its services rights on %s (%s, what hostServices.enabled installs)",
		meshName(framework.HostCluster), path)
	return nil
}

// keepNodesReady renews every sample node's Ready condition, as kubelets
// would, until ctx ends, so that the demo's Pods stay Ready.
func keepNodesReady(ctx context.Context, env *framework.Env, nodesPerCluster int) {
	for {
		for i := range env.NumClusters() {
			var names []string
			for k := 1; k <= nodesPerCluster; k++ {
				names = append(names, sampleNodeName(env, i, k))
			}
			if err := env.RenewNodesReady(ctx, i, names...); err != nil && ctx.Err() == nil {
				log.Printf("renewing the nodes' Ready condition: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(15 * time.Second):
		}
	}
}

// printServicesHelp prints the commands that show the demo's export and
// its imports.
func printServicesHelp(env *framework.Env) {
	fmt.Printf(`
Services across clusters (ClusterMesh demo has spec.multiClusterServices: Enabled):
  kubectl get svc,pods,serviceexports -n demo --context cluster-%[1]d-admin   # %[2]s exports demo/hello
  kubectl get serviceexport hello -n demo --context cluster-%[1]d-admin -o jsonpath='{.status.conditions}'
  kubectl get serviceimports,svc,endpointslices -n demo --context cluster-%[1]d-admin   # its import (the exporting cluster imports too)
`, demoExporter, meshName(demoExporter))
	fmt.Printf("  kubectl get serviceimports,svc,endpointslices -n demo --context cluster-%d-admin   # %s, the host, imports it too (the grant's serviceNamespaces)\n",
		framework.HostCluster, meshName(framework.HostCluster))
	for i := 1; i < env.NumClusters(); i++ {
		if i == demoExporter {
			continue
		}
		note := ""
		if i >= exampleClusters {
			note = fmt.Sprintf("   # once %s has joined (docs/tutorial.md)", meshName(i))
		}
		fmt.Printf("  kubectl get serviceimports -n demo --context cluster-%d-admin%s\n", i, note)
	}
	fmt.Println("  kubectl mesh services demo                                   # what every cluster imports, and why not")
	fmt.Printf("  kubectl mesh dns status --member-kubeconfig $KUBECONFIG --member-context cluster-%d-admin   # CoreDNS for clusterset.local names\n", demoExporter)
}
