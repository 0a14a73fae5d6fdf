package main

import (
	"fmt"
	"path/filepath"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func printHelp(env *framework.Env, m *framework.MeshServer, kubeconfig, example, grant string, services bool) {
	kubectl := env.KubectlPath()
	fmt.Printf(`
kilo-mesh local environment is up: %d clusters, kilo-mesh-apiserver at %s.

  export KUBECONFIG=%s
  alias kubectl=%s   # kubectl %s; any recent kubectl works
  export PATH=%s:$PATH   # kubectl mesh: the plugin make run built

Contexts: cluster-<i>-<user> for users admin, tenant-a, tenant-b, viewer-a
(current: cluster-0-admin, namespace demo). cluster-0 hosts the API.

Clusters (Kilo nodes in locations dc1 and dc2, WireGuard port 51820):
`, env.NumClusters(), m.URL, kubeconfig, kubectl, framework.KubeVersion, pluginDir())
	for i := range env.NumClusters() {
		secret := "local (the server's own identity)"
		switch {
		case i >= exampleClusters:
			secret = fmt.Sprintf("not in a mesh yet: kubectl mesh join demo --name %s --member-kubeconfig %s --member-context %s-admin",
				meshName(i), kubeconfig, env.Cluster(i).Name)
		case i != framework.HostCluster:
			secret = "Secret demo/" + secretName(i) + `, key "kubeconfig"`
		}
		fmt.Printf("  %s = %q: pods %s, services %s, Kilo subnet %s, nodes %s; %s\n",
			env.Cluster(i).Name, meshName(i), podCIDR(i), serviceCIDR(i), kiloSubnet(i), nodeCIDR(i), secret)
	}
	fmt.Printf(`
Try:
  kubectl api-resources --api-group=mesh.kilo.squat.ai
  kubectl get clustermeshes
  kubectl get nodes -o wide
  kubectl get nodes -o yaml --context cluster-1-admin | grep kilo.squat.ai
  kubectl get peers.kilo.squat.ai --context cluster-1-admin
  kubectl get cmesh -n demo --context cluster-0-tenant-a       # allowed (edit in demo)
  kubectl get cmesh -n demo --context cluster-0-tenant-b       # forbidden
  kubectl mesh status demo                                     # and plan, peers, why, graph: kubectl mesh --help
  kubectl mesh status demo --context cluster-0-tenant-a        # flags after the plugin's name: kubectl refuses them before it
`)
	if example != "" {
		fmt.Printf("  kubectl get cmesh -o yaml                                    # from %s, created by tenant-a\n", example)
	}
	fmt.Printf(`  kubectl get clustermeshgrants                                # created by the demo: %s
  kubectl get cmesh demo -o jsonpath='{.status.conditions[?(@.type=="Granted")]}'
  kubectl get clustermeshgrants --context cluster-0-tenant-a   # forbidden: grants are for admins
`, grant)
	if services {
		printServicesHelp(env)
	}
	fmt.Printf(`
Logs: %s (kilo-mesh-apiserver), %s
Press Ctrl-C to stop.
`, m.LogPath, filepath.Join(env.Dir, "logs"))
}

// pluginDir is where make run built kubectl-mesh: bin of the repository.
func pluginDir() string {
	root, err := framework.RepoRoot()
	if err != nil {
		return "bin"
	}
	return filepath.Join(root, "bin")
}
