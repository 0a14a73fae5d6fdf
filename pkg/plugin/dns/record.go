package dns

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/dns/corefile"
)

// RecordAnnotation, on the ConfigMap holding the Corefile, records what
// `kubectl mesh dns enable` changed, so that disable undoes that and only
// that, whoever edited the Corefile since.
const RecordAnnotation = "mesh.kilo.squat.ai/dns-enabled"

// record is the value of RecordAnnotation.
type record struct {
	Corefile corefile.Edits `json:"corefile"`
	// RBAC: enable created the ClusterRole and binding of
	// member.CoreDNSObjects.
	RBAC bool `json:"rbac,omitempty"`
	// ServiceAccount is the one the binding names.
	ServiceAccount string `json:"serviceAccount,omitempty"`
}

// readRecord returns the record on cm, if any.
func readRecord(cm *corev1.ConfigMap) (*record, error) {
	v, ok := cm.Annotations[RecordAnnotation]
	if !ok {
		return nil, nil
	}
	r := &record{}
	if err := json.Unmarshal([]byte(v), r); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: annotation %s is not what enable writes (%v): remove it, and undo its changes by hand if any", cm.Namespace, cm.Name, RecordAnnotation, err)
	}
	if r.Corefile.Zone == "" {
		r.Corefile.Zone = corefile.Zone
	}
	return r, nil
}

// merge adds what a later enable changed to what an earlier one recorded.
func (r *record) merge(e corefile.Edits, rbac bool, sa string) {
	if e.ZoneArg {
		r.Corefile.ZoneArg = true
	}
	if e.Multicluster != "" {
		r.Corefile.Multicluster = e.Multicluster
	}
	for _, k := range e.CacheDisable {
		if !slices.Contains(r.Corefile.CacheDisable, k) {
			r.Corefile.CacheDisable = append(r.Corefile.CacheDisable, k)
		}
	}
	if rbac {
		r.RBAC, r.ServiceAccount = true, sa
	}
}

func (r *record) empty() bool { return r.Corefile.Empty() && !r.RBAC }

func (r *record) encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// changes lists what the record says enable changed, for people.
func (r *record) changes() []string {
	var out []string
	if r.Corefile.ZoneArg {
		out = append(out, r.Corefile.Zone+" among the kubernetes plugin's zones")
	}
	switch r.Corefile.Multicluster {
	case corefile.MulticlusterLine:
		out = append(out, "the multicluster option in its block")
	case corefile.MulticlusterBlock:
		out = append(out, "a block for the multicluster option")
	}
	for _, k := range r.Corefile.CacheDisable {
		out = append(out, fmt.Sprintf("%s beside the cluster domain in the cache's disable %s", r.Corefile.Zone, k))
	}
	if r.RBAC {
		out = append(out, "the ClusterRole and ClusterRoleBinding letting "+r.ServiceAccount+" list and watch ServiceImports")
	}
	return out
}
