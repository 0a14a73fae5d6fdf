package join

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// printDryRun writes every object join would write, as YAML documents: the
// member identity (on the member), the kubeconfig Secret (on the host; its
// token redacted, shown as stringData so it can be read) and the apply
// configuration of the mesh entry.
func printDryRun(w io.Writer, identity []*unstructured.Unstructured, ns, secretName, key, cluster string, kubeconfig, meshPatch []byte) error {
	for _, u := range identity {
		if err := printDoc(w, "on the member cluster "+cluster, u.Object); err != nil {
			return err
		}
	}
	secret := map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"type":       "Opaque",
		"metadata": map[string]any{
			"name":      secretName,
			"namespace": ns,
			"labels":    map[string]any{"app.kubernetes.io/managed-by": "kubectl-mesh", LabelCluster: cluster},
		},
		"stringData": map[string]any{key: string(kubeconfig)},
	}
	if err := printDoc(w, "on the host cluster; the token is redacted", secret); err != nil {
		return err
	}
	var patch map[string]any
	if err := yaml.Unmarshal(meshPatch, &patch); err != nil {
		return err
	}
	return printDoc(w, "on the host cluster: server-side apply of the entry", patch)
}

func printDoc(w io.Writer, comment string, obj map[string]any) error {
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "---\n# %s\n%s", comment, out)
	return err
}
