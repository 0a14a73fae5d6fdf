package services

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// export is one ServiceExport of one cluster and what it carries.
type export struct {
	cluster *clusterState
	obj     *mcsv1beta1.ServiceExport
	svc     *corev1.Service // nil when the exported Service does not exist
	// valid is the reason of the Valid condition.
	valid     mcsv1beta1.ServiceExportConditionReason
	typ       mcsv1beta1.ServiceImportType
	groups    []*endpointGroup
	carried   int
	leftOut   map[string]int
	conflicts []string
	// deniedWhy says why the export's namespace is not granted.
	deniedWhy string
}

// service is one exported Service across the clusters of the mesh, merged
// as the KEP says: the oldest valid export (then the lowest cluster name)
// decides every property, the import carries the union of the ports, and
// every export involved is told of each conflict.
type service struct {
	key     types.NamespacedName
	exports []*export // sorted by age, then cluster
	valid   []*export
	// The merged properties, from valid[0] unless the union says otherwise.
	typ       mcsv1beta1.ServiceImportType
	ports     []mcsv1beta1.ServicePort
	conflicts []string
}

// olderExport orders exports by creation time, then cluster name.
func olderExport(a, b *export) int {
	if c := a.obj.CreationTimestamp.Time.Compare(b.obj.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.cluster.Name, b.cluster.Name)
}

// classify sets an export's Valid reason and import type.
func classify(e *export) {
	switch {
	case e.svc == nil:
		e.valid = mcsv1beta1.ServiceExportReasonNoService
	case e.svc.Spec.Type == corev1.ServiceTypeExternalName:
		e.valid = mcsv1beta1.ServiceExportReasonInvalidServiceType
	default:
		e.valid = mcsv1beta1.ServiceExportReasonValid
		e.typ = mcsv1beta1.ClusterSetIP
		if e.svc.Spec.ClusterIP == corev1.ClusterIPNone {
			e.typ = mcsv1beta1.Headless
		}
	}
}

// merge resolves the service's properties and conflicts from its valid
// exports, which it expects sorted oldest first.
func (s *service) merge() {
	if len(s.valid) == 0 {
		return
	}
	first := s.valid[0]
	s.typ = first.typ
	found := map[string]bool{}
	ports, portConflict := unionPorts(s.valid)
	s.ports = ports
	if portConflict {
		found[string(mcsv1beta1.ServiceExportReasonPortConflict)] = true
	}
	for _, e := range s.valid[1:] {
		for reason, differs := range map[mcsv1beta1.ServiceExportConditionReason]bool{
			mcsv1beta1.ServiceExportReasonTypeConflict:                  e.typ != first.typ,
			mcsv1beta1.ServiceExportReasonSessionAffinityConflict:       affinity(e.svc) != affinity(first.svc),
			mcsv1beta1.ServiceExportReasonSessionAffinityConfigConflict: !apiequality.Semantic.DeepEqual(affinityConfig(e.svc), affinityConfig(first.svc)),
			mcsv1beta1.ServiceExportReasonInternalTrafficPolicyConflict: trafficPolicy(e.svc) != trafficPolicy(first.svc),
			mcsv1beta1.ServiceExportReasonTrafficDistributionConflict:   deref(e.svc.Spec.TrafficDistribution) != deref(first.svc.Spec.TrafficDistribution),
			mcsv1beta1.ServiceExportReasonIPFamilyConflict:              !slices.Equal(e.svc.Spec.IPFamilies, first.svc.Spec.IPFamilies),
			mcsv1beta1.ServiceExportReasonLabelsConflict:                !maps.Equal(e.obj.Spec.ExportedLabels, first.obj.Spec.ExportedLabels),
			mcsv1beta1.ServiceExportReasonAnnotationsConflict:           !maps.Equal(e.obj.Spec.ExportedAnnotations, first.obj.Spec.ExportedAnnotations),
		} {
			if differs {
				found[string(reason)] = true
			}
		}
	}
	s.conflicts = slices.Sorted(maps.Keys(found))
	for _, e := range s.valid {
		e.conflicts = s.conflicts
	}
}

// unionPorts is the union of the exports' ports, oldest first: a port
// whose name, or whose number and protocol, an older export already uses
// differently is left out. Any difference between the exports' port sets is
// a PortConflict (the conformance suite expects one for a mere union).
func unionPorts(valid []*export) ([]mcsv1beta1.ServicePort, bool) {
	var out []mcsv1beta1.ServicePort
	byName := map[string]mcsv1beta1.ServicePort{}
	byNumber := map[string]string{} // "port/protocol" -> name
	conflict := false
	for i, e := range valid {
		ports := importPorts(e.svc)
		if i > 0 && !slices.EqualFunc(ports, importPorts(valid[0].svc), portEqual) {
			conflict = true
		}
		for _, p := range ports {
			number := fmt.Sprintf("%s/%d", p.Protocol, p.Port)
			if have, ok := byName[p.Name]; ok {
				if !portEqual(have, p) {
					conflict = true
				}
				continue
			}
			if _, ok := byNumber[number]; ok {
				conflict = true
				continue
			}
			byName[p.Name], byNumber[number] = p, p.Name
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b mcsv1beta1.ServicePort) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)))
	})
	return out, conflict
}

// importPorts are a Service's ports as an import carries them, sorted.
func importPorts(svc *corev1.Service) []mcsv1beta1.ServicePort {
	out := make([]mcsv1beta1.ServicePort, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		var app *string
		if p.AppProtocol != nil {
			a := *p.AppProtocol
			app = &a
		}
		out = append(out, mcsv1beta1.ServicePort{Name: p.Name, Protocol: protocol, AppProtocol: app, Port: p.Port})
	}
	slices.SortFunc(out, func(a, b mcsv1beta1.ServicePort) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func portEqual(a, b mcsv1beta1.ServicePort) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.Port == b.Port && deref(a.AppProtocol) == deref(b.AppProtocol)
}

func affinity(svc *corev1.Service) corev1.ServiceAffinity {
	return cmp.Or(svc.Spec.SessionAffinity, corev1.ServiceAffinityNone)
}

// affinityConfig is what the API server keeps: a config only with ClientIP.
func affinityConfig(svc *corev1.Service) *corev1.SessionAffinityConfig {
	if affinity(svc) != corev1.ServiceAffinityClientIP {
		return nil
	}
	return svc.Spec.SessionAffinityConfig
}

func trafficPolicy(svc *corev1.Service) corev1.ServiceInternalTrafficPolicy {
	return cmp.Or(deref(svc.Spec.InternalTrafficPolicy), corev1.ServiceInternalTrafficPolicyCluster)
}
