package migrate

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// Missing is a field of the converted mesh the user must fill in, because
// the predecessor's flat form does not say which network is which.
type Missing struct {
	Cluster string
	// Field is the field of spec.clusters[] to fill in.
	Field string
	// Required says whether the mesh is invalid without it.
	Required bool
	// Many says whether the field takes one or more networks (a list)
	// rather than exactly one.
	Many bool
	// What the field holds, for the placeholder of the skeleton.
	What string
	// Candidates are the cluster's allowedNetworks to choose from.
	Candidates []string
}

func (m Missing) String() string {
	need := "optional"
	if m.Required {
		need = "required"
	}
	return fmt.Sprintf("%s: %s (%s), %s %s", m.Cluster, m.Field, need, m.count(), strings.Join(m.Candidates, ", "))
}

// count says how many of the candidates the field takes.
func (m Missing) count() string {
	if m.Many {
		return "one or more of"
	}
	return "one of"
}

// Conversion is the mesh.kilo.squat.ai form of a predecessor mesh.
type Conversion struct {
	Mesh *meshv1alpha1.ClusterMesh
	// Missing lists what the user must fill in; empty for the typed form,
	// whose field names are ours.
	Missing []Missing
}

// Convert turns a predecessor ClusterMesh into ours, in namespace ns when
// the predecessor object names none. The typed form converts field by
// field. The flat form (allowedNetworks) does not say which network holds
// the pods, the WireGuard addresses or the services, and a wrong guess would
// advertise the wrong addresses: those fields are left empty and listed.
func Convert(old *PredecessorMesh, ns string) Conversion {
	if old.Namespace != "" {
		ns = old.Namespace
	}
	mesh := &meshv1alpha1.ClusterMesh{
		TypeMeta:   metav1.TypeMeta{APIVersion: meshv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterMesh"},
		ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: ns},
	}
	var missing []Missing
	for _, c := range old.Spec.Clusters {
		e := meshv1alpha1.ClusterEntry{
			Name:                c.Name,
			Local:               c.Local,
			PodCIDRs:            c.PodCIDRs,
			WireguardCIDR:       c.WireguardCIDR,
			WireguardPort:       c.WireguardPort,
			ServiceCIDR:         c.ServiceCIDR,
			AdditionalCIDRs:     c.AdditionalCIDRs,
			PersistentKeepalive: c.PersistentKeepalive,
		}
		if c.KubeconfigSecretRef != nil {
			e.KubeconfigSecretRef = &meshv1alpha1.SecretKeyReference{Name: c.KubeconfigSecretRef.Name, Key: c.KubeconfigSecretRef.Key}
		}
		if len(c.AllowedNetworks) > 0 && len(c.PodCIDRs) == 0 && c.WireguardCIDR == "" {
			for _, f := range []Missing{
				{Field: "podCIDRs", Required: true, Many: true, What: "the pod networks"},
				{Field: "wireguardCIDR", Required: true, What: "the Kilo subnet, kg's --subnet"},
				{Field: "serviceCIDR", What: "the service network"},
				{Field: "additionalCIDRs", Many: true, What: "other networks to advertise"},
			} {
				if (f.Field == "serviceCIDR" && c.ServiceCIDR != "") || (f.Field == "additionalCIDRs" && len(c.AdditionalCIDRs) > 0) {
					continue
				}
				f.Cluster, f.Candidates = c.Name, c.AllowedNetworks
				missing = append(missing, f)
			}
		}
		mesh.Spec.Clusters = append(mesh.Spec.Clusters, e)
	}
	return Conversion{Mesh: mesh, Missing: missing}
}
