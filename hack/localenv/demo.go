package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Network layout of cluster i, disjoint across clusters as Kilo needs, and
// matching artifacts/examples/clustermesh.yaml (cluster 0 = "east", the local
// cluster; cluster 1 = "west"):
//
//	pods        10.(42+10i).0.0/16, node k: 10.(42+10i).k.0/24
//	services    10.(43+10i).0.0/16 (the kube-apiserver's --service-cluster-ip-range)
//	Kilo subnet 10.(4+i).0.0/16, leaders' WireGuard IPs .1, .2, ... by location name
//	node hosts  192.168.(10+10i).0/24, node k: 192.168.(10+10i).(10+k)
//	endpoints   public documentation ranges, UDP 51820
func podCIDR(i int) string     { return fmt.Sprintf("10.%d.0.0/16", 42+10*i) }
func serviceCIDR(i int) string { return fmt.Sprintf("10.%d.0.0/16", 43+10*i) }
func kiloSubnet(i int) string  { return fmt.Sprintf("10.%d.0.0/16", 4+i) }
func nodeCIDR(i int) string    { return fmt.Sprintf("192.168.%d.0/24", 10+10*i) }

// exampleClusters is how many clusters the example ClusterMesh names; the
// others are left for `kubectl mesh join` (docs/tutorial.md).
const exampleClusters = 2

// meshName is cluster i's name in the example ClusterMesh, or the name the
// tutorial joins it as.
func meshName(i int) string {
	switch i {
	case 0:
		return "east"
	case 1:
		return "west"
	case 2:
		return "north"
	default:
		return fmt.Sprintf("cluster-%d", i)
	}
}

// secretName is the kubeconfig Secret of member cluster i in namespace demo.
func secretName(i int) string { return meshName(i) + "-kubeconfig" }

func publicIP(i, n int) string {
	switch i {
	case 0:
		return fmt.Sprintf("203.0.113.%d", 10+n)
	case 1:
		return fmt.Sprintf("198.51.100.%d", 10+n)
	default:
		return fmt.Sprintf("192.0.2.%d", (i-2)*20+10+n)
	}
}

// createSampleNodes creates n nodes on cluster i as kg would annotate them
// with location granularity: odd nodes in location dc1, even ones in dc2;
// the first node of each location is its leader (leader annotation and a
// public endpoint) and carries the location's WireGuard IP (dc1 .1, dc2 .2,
// the order of the group names).
func createSampleNodes(ctx context.Context, env *framework.Env, i, n int) error {
	leaders := map[string]bool{}
	for k := 1; k <= n; k++ {
		location, wgHost := "dc1", 1
		if k%2 == 0 {
			location, wgHost = "dc2", 2
		}
		node := framework.KiloNode{
			Name:        sampleNodeName(env, i, k),
			Location:    location,
			RegionLabel: location,
			Endpoint:    fmt.Sprintf("%s:51820", publicIP(i, k)),
			ExternalIP:  publicIP(i, k),
			InternalIP:  fmt.Sprintf("192.168.%d.%d/24", 10+10*i, 10+k),
			PodCIDR:     fmt.Sprintf("10.%d.%d.0/24", 42+10*i, k),
			Granularity: "location",
		}
		if !leaders[location] {
			leaders[location] = true
			node.Leader = true
			node.WireGuardIP = fmt.Sprintf("10.%d.0.%d/16", 4+i, wgHost)
		}
		if _, err := env.CreateKiloNode(ctx, i, node); err != nil {
			return err
		}
	}
	return nil
}

// sampleNodeName is the name of sample node k (from 1) of cluster i.
func sampleNodeName(env *framework.Env, i, k int) string {
	return fmt.Sprintf("%s-node-%d", env.Cluster(i).Name, k)
}

// setupDemo creates namespace demo on the host with the kubeconfig Secret of
// the example's member cluster (user admin there; west-kubeconfig for
// cluster-1) and lets tenant-a edit there.
func setupDemo(ctx context.Context, env *framework.Env) error {
	client := env.Client(framework.HostCluster, framework.UserAdmin)
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i := 1; i < min(env.NumClusters(), exampleClusters); i++ {
		if _, err := env.CreateKubeconfigSecret(ctx, demoNamespace, secretName(i), i, framework.UserAdmin); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return env.GrantNamespaceRole(ctx, framework.HostCluster, demoNamespace, framework.UserTenantA, "edit")
}

// applyDemoGrant creates the ClusterMeshGrant of artifacts/examples as an
// admin and says so: without it, tenant-a's mesh could not have a local
// cluster. It returns the manifest's path.
func applyDemoGrant(ctx context.Context, env *framework.Env) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "artifacts", "examples", "clustermeshgrant.yaml")
	if _, stderr, err := env.Kubectl(ctx, framework.HostCluster, framework.UserAdmin, "apply", "-f", path); err != nil {
		return "", fmt.Errorf("applying the demo's ClusterMeshGrant %s: %w: %s", path, err, stderr)
	}
	log.Printf("created ClusterMeshGrant demo (%s): the meshes of namespace %s may reach into %s within its networks",
		path, demoNamespace, env.Cluster(framework.HostCluster).Name)
	return path, nil
}

// writeCombinedKubeconfig writes one kubeconfig with a context
// <cluster>-<user> for every cluster and user; the current context is
// cluster-0-admin in namespace demo.
func writeCombinedKubeconfig(env *framework.Env, path string) error {
	cfg := clientcmdapi.NewConfig()
	for i := range env.NumClusters() {
		c := env.Cluster(i)
		ca, err := os.ReadFile(c.CAFile)
		if err != nil {
			return err
		}
		cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: ca}
		ns := "default"
		if i == framework.HostCluster {
			ns = demoNamespace
		}
		for _, u := range env.Users() {
			cfg.AuthInfos[u] = &clientcmdapi.AuthInfo{Token: env.Token(u)}
			cfg.Contexts[c.Name+"-"+u] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: u, Namespace: ns}
		}
	}
	cfg.CurrentContext = env.Cluster(framework.HostCluster).Name + "-" + framework.UserAdmin
	return clientcmd.WriteToFile(*cfg, path)
}
