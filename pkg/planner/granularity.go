package planner

import (
	"fmt"
	"sort"
	"strings"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// granularityFromAnnotation maps kg's annotation values onto the API's.
// "cross" is a widely deployed patch of kg; it groups like "full".
var granularityFromAnnotation = map[string]meshv1alpha1.Granularity{
	"location": meshv1alpha1.GranularityLocation,
	"full":     meshv1alpha1.GranularityFull,
	"cross":    meshv1alpha1.GranularityCross,
}

// granularityDecision is the granularity in effect for a cluster and the
// problems met while deciding it.
type granularityDecision struct {
	value    meshv1alpha1.Granularity
	source   meshv1alpha1.GranularitySource
	warnings []meshv1alpha1.PlanIssue
}

// decideGranularity takes the spec's granularity unless it is Auto (or
// empty). Auto counts the kilo.squat.ai/granularity annotations of the
// Kilo-Ready nodes, falling back to all nodes when none of those carries
// one: kg writes its --mesh-granularity on every node it runs on, so a dead
// node's stale value must not outvote the live ones. The most common value
// wins; a tie goes to location, then full, then cross. No annotation at all
// means Kilo's default, location. Any disagreement is a warning, because kg
// agents with different granularities do not form one mesh.
func decideGranularity(cluster string, spec meshv1alpha1.Granularity, nodes []nodeInfo) granularityDecision {
	switch spec {
	case meshv1alpha1.GranularityLocation, meshv1alpha1.GranularityFull, meshv1alpha1.GranularityCross:
		return granularityDecision{value: spec, source: meshv1alpha1.GranularitySourceSpec}
	}
	var d granularityDecision
	if spec != "" && spec != meshv1alpha1.GranularityAuto {
		d.warnings = append(d.warnings, meshv1alpha1.PlanIssue{
			Reason: WarningUnknownGranularity, Cluster: cluster,
			Message: fmt.Sprintf("granularity %q is not one of Auto, Location, Full, Cross; detecting it from the nodes", spec),
		})
	}

	count := func(readyOnly bool) (map[meshv1alpha1.Granularity]int, map[string]int) {
		known := map[meshv1alpha1.Granularity]int{}
		unknown := map[string]int{}
		for i := range nodes {
			n := &nodes[i]
			if (readyOnly && !n.kiloReady) || n.granularity == "" {
				continue
			}
			if g, ok := granularityFromAnnotation[n.granularity]; ok {
				known[g]++
			} else {
				unknown[n.granularity]++
			}
		}
		return known, unknown
	}
	known, unknown := count(true)
	if len(known) == 0 {
		known, unknown = count(false)
	}
	for _, v := range sortedKeys(unknown) {
		d.warnings = append(d.warnings, meshv1alpha1.PlanIssue{
			Reason: WarningUnknownGranularity, Cluster: cluster,
			Message: fmt.Sprintf("%d nodes carry %s=%s, which is not location, full or cross; ignored", unknown[v], kilov1alpha1.AnnotationGranularity, memberText(v)),
		})
	}
	if len(known) == 0 {
		d.value, d.source = meshv1alpha1.GranularityLocation, meshv1alpha1.GranularitySourceDefault
		return d
	}
	order := []meshv1alpha1.Granularity{meshv1alpha1.GranularityLocation, meshv1alpha1.GranularityFull, meshv1alpha1.GranularityCross}
	d.source = meshv1alpha1.GranularitySourceNodes
	for _, g := range order {
		if known[g] > known[d.value] {
			d.value = g
		}
	}
	if len(known) > 1 {
		var parts []string
		for _, g := range order {
			if known[g] > 0 {
				parts = append(parts, fmt.Sprintf("%s on %d", strings.ToLower(string(g)), known[g]))
			}
		}
		d.warnings = append(d.warnings, meshv1alpha1.PlanIssue{
			Reason: WarningGranularityDisagreement, Cluster: cluster,
			Message: fmt.Sprintf("nodes disagree on %s (%s nodes); planning with %s. Set the granularity in the mesh spec, or run every kg with the same --mesh-granularity",
				kilov1alpha1.AnnotationGranularity, strings.Join(parts, ", "), d.value),
		})
	}
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
