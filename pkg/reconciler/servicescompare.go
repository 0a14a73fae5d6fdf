package reconciler

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// Comparisons of what the services computation wants with what a member
// cache holds. Only what the computation sets is compared, so the API
// server's defaults and other writers' labels never look like a change.

// subset reports whether every entry of want is in have.
func subset(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// mergedMap is have with want's entries set: other writers' labels stay.
func mergedMap(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

func importSpecCurrent(want, have *mcsv1beta1.ServiceImport) bool {
	return maps.Equal(importLabels(have, want), have.Labels) && maps.Equal(importAnnotations(have.Annotations, want.Annotations), have.Annotations) &&
		apiequality.Semantic.DeepEqual(want.Spec, have.Spec)
}

// importLabels is have's labels with want's set, less the exported labels
// have's key list names and want no longer has.
func importLabels(have, want *mcsv1beta1.ServiceImport) map[string]string {
	out := mergedMap(have.Labels, want.Labels)
	dropUnlisted(out, have.Annotations[services.AnnotationExportedLabels], want.Labels)
	return out
}

// importAnnotations is have with want's entries set, less a derived
// Service annotation want no longer has (it would name a deleted Service),
// and less the exported annotations and key lists want no longer has.
func importAnnotations(have, want map[string]string) map[string]string {
	out := mergedMap(have, want)
	dropUnlisted(out, have[services.AnnotationExportedAnnotations], want)
	for _, k := range []string{services.AnnotationDerivedService, services.AnnotationExportedLabels, services.AnnotationExportedAnnotations} {
		if _, ok := want[k]; !ok {
			delete(out, k)
		}
	}
	return out
}

// dropUnlisted deletes from m the keys of the comma-separated list that
// want does not have: keys the mesh wrote and no longer writes.
func dropUnlisted(m map[string]string, list string, want map[string]string) {
	if list == "" {
		return
	}
	for _, k := range strings.Split(list, ",") {
		if _, ok := want[k]; !ok {
			delete(m, k)
		}
	}
}

// importStatus is have's status with want's set, and whether it changed;
// conditions keep their lastTransitionTime while their status holds.
func importStatus(have, want *mcsv1beta1.ServiceImport) (mcsv1beta1.ServiceImportStatus, bool) {
	st := *have.Status.DeepCopy()
	conds, changed := mergeConditions(st.Conditions, want.Status.Conditions)
	st.Conditions = conds
	if !apiequality.Semantic.DeepEqual(st.Clusters, want.Status.Clusters) || st.EndpointSliceObjects != want.Status.EndpointSliceObjects {
		st.Clusters, st.EndpointSliceObjects = want.Status.Clusters, want.Status.EndpointSliceObjects
		changed = true
	}
	return st, changed
}

// withOwner is the derived Service owned by its ServiceImport.
func withOwner(svc *corev1.Service, si *mcsv1beta1.ServiceImport) *corev1.Service {
	out := svc.DeepCopy()
	out.OwnerReferences = []metav1.OwnerReference{{APIVersion: mcsv1beta1.GroupVersion.String(), Kind: mcsv1beta1.ServiceImportKindName, Name: si.Name, UID: si.UID}}
	return out
}

// mergedOwners is have's owner references with want's set: another owner's
// stay, and a reference to an owner of one of want's group, kind and name
// (the ServiceImport as it was before it was recreated) is replaced in place.
func mergedOwners(have, want []metav1.OwnerReference) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(have)+len(want))
	placed := make([]bool, len(want))
	for _, r := range have {
		i := slices.IndexFunc(want, func(w metav1.OwnerReference) bool { return sameOwner(r, w) })
		switch {
		case i < 0:
			out = append(out, r)
		case !placed[i]:
			out, placed[i] = append(out, want[i]), true
		}
	}
	for i, w := range want {
		if !placed[i] {
			out = append(out, w)
		}
	}
	return out
}

// sameOwner reports whether a and b name one owner, whatever its version and UID.
func sameOwner(a, b metav1.OwnerReference) bool {
	return a.Name == b.Name && schema.FromAPIVersionAndKind(a.APIVersion, a.Kind).GroupKind() == schema.FromAPIVersionAndKind(b.APIVersion, b.Kind).GroupKind()
}

func derivedCurrent(want, have *corev1.Service) bool {
	w, h := &want.Spec, &have.Spec
	return subset(want.Labels, have.Labels) && apiequality.Semantic.DeepEqual(mergedOwners(have.OwnerReferences, want.OwnerReferences), have.OwnerReferences) &&
		w.Type == h.Type && len(h.Selector) == 0 && apiequality.Semantic.DeepEqual(w.Ports, h.Ports) &&
		(w.SessionAffinity == "" || w.SessionAffinity == h.SessionAffinity) &&
		(w.SessionAffinityConfig == nil || apiequality.Semantic.DeepEqual(w.SessionAffinityConfig, h.SessionAffinityConfig)) &&
		(len(w.IPFamilies) == 0 || apiequality.Semantic.DeepEqual(w.IPFamilies, h.IPFamilies)) &&
		(w.IPFamilyPolicy == nil || apiequality.Semantic.DeepEqual(w.IPFamilyPolicy, h.IPFamilyPolicy)) &&
		(w.InternalTrafficPolicy == nil || apiequality.Semantic.DeepEqual(w.InternalTrafficPolicy, h.InternalTrafficPolicy)) &&
		(w.TrafficDistribution == nil || apiequality.Semantic.DeepEqual(w.TrafficDistribution, h.TrafficDistribution))
}

// sliceCurrent compares what the member cache keeps of an endpoint:
// addresses, conditions, hostname and zone.
func sliceCurrent(want, have *discoveryv1.EndpointSlice) bool {
	if !subset(want.Labels, have.Labels) || want.AddressType != have.AddressType || !apiequality.Semantic.DeepEqual(want.Ports, have.Ports) ||
		len(want.Endpoints) != len(have.Endpoints) {
		return false
	}
	for i := range want.Endpoints {
		w, h := &want.Endpoints[i], &have.Endpoints[i]
		if !apiequality.Semantic.DeepEqual(w.Addresses, h.Addresses) || !apiequality.Semantic.DeepEqual(w.Conditions, h.Conditions) ||
			!apiequality.Semantic.DeepEqual(w.Hostname, h.Hostname) || !apiequality.Semantic.DeepEqual(w.Zone, h.Zone) {
			return false
		}
	}
	return true
}

func keyOf(o metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// mergeConditions sets want into have, keeping lastTransitionTime where
// the status did not change; changed is false when nothing moved.
func mergeConditions(have, want []metav1.Condition) ([]metav1.Condition, bool) {
	out := make([]metav1.Condition, len(have))
	for i := range have {
		out[i] = *have[i].DeepCopy()
	}
	changed := false
	for _, c := range want {
		old := meta.FindStatusCondition(out, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
			continue
		}
		meta.SetStatusCondition(&out, c)
		changed = true
	}
	return out, changed
}

// importCurrent reports whether the cluster holds the import as wanted.
func (p *servicesPass) importCurrent(imp *services.Import) bool {
	si := p.imports[keyOf(imp.ServiceImport)]
	if si == nil || !importSpecCurrent(imp.ServiceImport, si) {
		return false
	}
	if _, changed := importStatus(si, imp.ServiceImport); changed {
		return false
	}
	if d := imp.DerivedService; d != nil {
		have := p.svcs[keyOf(d)]
		if have == nil || !derivedCurrent(withOwner(d, si), have) {
			return false
		}
	}
	for _, es := range imp.EndpointSlices {
		if have := p.slices[keyOf(es)]; have == nil || !sliceCurrent(es, have) {
			return false
		}
	}
	return true
}
