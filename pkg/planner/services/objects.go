package services

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// serviceImport is the desired ServiceImport: the oldest valid export's
// properties, the union of ports, the derived Service's cluster IPs (one
// per family, in ipFamilies order, once allocated) and the exporting
// clusters. A note, when set, is the Ready condition's message.
func (c *computation) serviceImport(s *service, derived string, derivedSvc *corev1.Service, sliceCount int, note string) *mcsv1beta1.ServiceImport {
	w := s.valid[0]
	labels := maps.Clone(w.obj.Spec.ExportedLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, c.managedLabels(""))
	annotations := maps.Clone(w.obj.Spec.ExportedAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	if derivedSvc != nil { // never pointing at a Service the mesh did not write
		annotations[AnnotationDerivedService] = derived
	}
	setKeyList(annotations, AnnotationExportedLabels, w.obj.Spec.ExportedLabels)
	setKeyList(annotations, AnnotationExportedAnnotations, w.obj.Spec.ExportedAnnotations)
	if len(annotations) == 0 {
		annotations = nil
	}
	si := &mcsv1beta1.ServiceImport{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcsv1beta1.GroupVersion.String(), Kind: mcsv1beta1.ServiceImportKindName},
		ObjectMeta: metav1.ObjectMeta{Namespace: s.key.Namespace, Name: s.key.Name, Labels: labels, Annotations: annotations},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:                  s.typ,
			Ports:                 s.ports,
			SessionAffinity:       w.svc.Spec.SessionAffinity,
			SessionAffinityConfig: affinityConfig(w.svc).DeepCopy(),
			IPFamilies:            append([]corev1.IPFamily(nil), w.svc.Spec.IPFamilies...),
			InternalTrafficPolicy: w.svc.Spec.InternalTrafficPolicy,
			TrafficDistribution:   w.svc.Spec.TrafficDistribution,
		},
		Status: mcsv1beta1.ServiceImportStatus{EndpointSliceObjects: mcsv1beta1.EndpointSliceObjectsAbsent},
	}
	if sliceCount > 0 {
		si.Status.EndpointSliceObjects = mcsv1beta1.EndpointSliceObjectsPresent
	}
	for _, e := range s.valid {
		si.Status.Clusters = append(si.Status.Clusters, mcsv1beta1.ClusterStatus{Cluster: e.cluster.Name})
	}
	sortClusters(si.Status.Clusters)
	if derivedSvc != nil && len(derivedSvc.Spec.ClusterIPs) > 0 && derivedSvc.Spec.ClusterIP != corev1.ClusterIPNone {
		si.Spec.IPs = append([]string(nil), derivedSvc.Spec.ClusterIPs...)
	}
	ready := metav1.Condition{Type: string(mcsv1beta1.ServiceImportConditionReady), Status: metav1.ConditionTrue,
		Reason: string(mcsv1beta1.ServiceImportReasonReady), Message: "the import is written", LastTransitionTime: metav1.NewTime(c.in.Now)}
	switch {
	case derived != "" && derivedSvc == nil:
		ready.Status, ready.Reason = metav1.ConditionFalse, BlockedDerivedServiceTaken
	case derived != "" && len(si.Spec.IPs) == 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceImportReasonPending)
		ready.Message = "waiting for the derived Service's cluster IPs"
	}
	if note != "" {
		ready.Message = note
	}
	si.Status.Conditions = []metav1.Condition{ready}
	return si.DeepCopy() // shares nothing with the input or other clusters
}

// derivedService is the selector-less ClusterIP Service that kube-proxy
// routes a ClusterSetIP import by. have is the one this mesh wrote, if
// any: its allocated cluster IPs are immutable and kept.
func (c *computation) derivedService(s *service, name string, have *corev1.Service) *corev1.Service {
	w := s.valid[0].svc
	labels := c.managedLabels("")
	labels[mcsv1beta1.LabelServiceName] = s.key.Name
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: s.key.Namespace, Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			IPFamilies:            append([]corev1.IPFamily(nil), w.Spec.IPFamilies...),
			IPFamilyPolicy:        w.Spec.IPFamilyPolicy,
			SessionAffinity:       w.Spec.SessionAffinity,
			SessionAffinityConfig: affinityConfig(w).DeepCopy(),
			InternalTrafficPolicy: w.Spec.InternalTrafficPolicy,
			TrafficDistribution:   w.Spec.TrafficDistribution,
		},
	}
	for _, p := range s.ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol, Port: p.Port, TargetPort: intstr.FromInt32(p.Port)})
	}
	if have != nil {
		svc.Spec.ClusterIP = have.Spec.ClusterIP
		svc.Spec.ClusterIPs = append([]string(nil), have.Spec.ClusterIPs...)
	}
	return svc.DeepCopy() // shares nothing with the input or other clusters
}

// endpointSlices hold every valid export's carried endpoints, one slice
// per source cluster, address type and port set, split at
// maxEndpointsPerSlice. A ClusterSetIP import's slices belong to its
// derived Service; a headless import's to no Service.
func (c *computation) endpointSlices(s *service, derived string) []*discoveryv1.EndpointSlice {
	prefix := derived
	if prefix == "" {
		prefix = s.key.Name
	}
	var out []*discoveryv1.EndpointSlice
	for _, e := range s.valid { // oldest first; sorted by name below
		for _, g := range e.groups {
			for start, chunk := 0, 0; start < len(g.endpoints); start, chunk = start+maxEndpointsPerSlice, chunk+1 {
				end := min(start+maxEndpointsPerSlice, len(g.endpoints))
				es := &discoveryv1.EndpointSlice{
					TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
					ObjectMeta: metav1.ObjectMeta{
						Namespace: s.key.Namespace,
						Name:      sliceName(prefix, e.cluster.Name, string(g.addressType), g.portsKey, strconv.Itoa(chunk)),
						Labels:    c.sliceLabels(s.key.Name, e.cluster.Name, derived),
					},
					AddressType: g.addressType,
					Ports:       slicePorts(g.ports),
				}
				for _, ep := range g.endpoints[start:end] {
					es.Endpoints = append(es.Endpoints, *ep.DeepCopy())
				}
				out = append(out, es)
			}
		}
	}
	sortSlices(out)
	return out
}

// setKeyList records in annotations[name] the sorted keys of exported,
// unless it has none.
func setKeyList(annotations map[string]string, name string, exported map[string]string) {
	if len(exported) > 0 {
		annotations[name] = strings.Join(slices.Sorted(maps.Keys(exported)), ",")
	}
}
