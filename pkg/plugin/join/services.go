package join

import (
	"context"
	"fmt"
	"io"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
)

// servicesChoice is whether join applies the member identity's services
// rights, and why, as join reports it.
type servicesChoice struct {
	grant bool
	why   string
	// warn, when not empty, is said on stderr: the mesh will not use the
	// cluster's services.
	warn string
}

// chooseServices decides on the services rights: --services when given,
// else whether the mesh has multi-cluster services Enabled. They are never
// taken away (another mesh may use them on the cluster), and rights an
// earlier version's single role held are carried over unless
// --services=false says otherwise. The member's roles are read with the
// caller's credentials there.
func (o *Options) chooseServices(ctx context.Context, dyn dynamic.Interface, mesh *meshv1alpha1.ClusterMesh) (servicesChoice, error) {
	enabled := mesh.Spec.MultiClusterServices == meshv1alpha1.MultiClusterServicesEnabled
	switch {
	case o.Services != nil && *o.Services:
		return servicesChoice{grant: true, why: "--services"}, nil
	case o.Services == nil && enabled:
		return servicesChoice{grant: true, why: fmt.Sprintf("clustermesh %s/%s has multi-cluster services Enabled", mesh.Namespace, mesh.Name)}, nil
	}
	c := servicesChoice{why: fmt.Sprintf("clustermesh %s/%s has no multi-cluster services; --services grants them", mesh.Namespace, mesh.Name)}
	if o.Services != nil {
		c.why = "--services=false"
		if enabled {
			c.warn = fmt.Sprintf("clustermesh %s/%s has multi-cluster services Enabled: without the services rights the mesh does not use %s's services "+
				"(reason ServicesForbidden) and writes nothing there", mesh.Namespace, mesh.Name, o.Name)
		}
	}
	roles := dyn.Resource(identityResources["ClusterRole"])
	_, err := roles.Get(ctx, member.ServicesClusterRole, metav1.GetOptions{})
	switch {
	case err == nil && o.Services == nil:
		// Applied again, so that it is exactly pkg/member's.
		return servicesChoice{grant: true, why: fmt.Sprintf("kept: ClusterRole %s exists, and another mesh may use it (delete it and its binding to take them away)",
			member.ServicesClusterRole)}, nil
	case err == nil:
		return servicesChoice{why: fmt.Sprintf("--services=false; ClusterRole %s exists and is left as it is, as another mesh may use it", member.ServicesClusterRole)}, nil
	case !apierrors.IsNotFound(err):
		return c, fmt.Errorf("reading ClusterRole %s on the member cluster: %w", member.ServicesClusterRole, err)
	}
	base, err := roles.Get(ctx, member.ClusterRole, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return c, nil
	case err != nil:
		return c, fmt.Errorf("reading ClusterRole %s on the member cluster: %w", member.ClusterRole, err)
	case o.Services == nil && grantsServices(base):
		return servicesChoice{grant: true, why: fmt.Sprintf("carried over: ClusterRole %s held them (an earlier version's single role), and another mesh may use them; "+
			"--services=false drops them", member.ClusterRole)}, nil
	}
	return c, nil
}

// grantsServices reports whether a ClusterRole has a rule on ServiceImports.
func grantsServices(role *unstructured.Unstructured) bool {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		if slices.Contains(groups, mcsv1beta1.GroupName) && slices.Contains(resources, mcsv1beta1.ServiceImportPluralName) {
			return true
		}
	}
	return false
}

func (c servicesChoice) report(w, errOut io.Writer) {
	state := "not granted"
	if c.grant {
		state = "granted"
	}
	fmt.Fprintf(w, "Services rights: %s (%s)\n", state, c.why)
	if c.warn != "" {
		fmt.Fprintf(errOut, "Warning: %s; rerun with --services to grant them.\n", c.warn)
	}
}
