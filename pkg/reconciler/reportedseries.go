package reconciler

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// reportedSeries owns the condition and services series of every mesh and
// remembers what each mesh's last pass set there, so that a pass touches
// only the series that changed: replacing a mesh's series by a partial
// match read every mesh's series on every pass (a cost that grew with the
// number of meshes, and a new series allocated for each condition).
type reportedSeries struct {
	mu         sync.Mutex
	conditions map[string][][2]string           // mesh -> condition type and status
	services   map[string]map[[2]string]float64 // mesh -> cluster and kind -> count
}

func newReportedSeries() *reportedSeries {
	return &reportedSeries{conditions: map[string][][2]string{}, services: map[string]map[[2]string]float64{}}
}

// reportConditions sets a mesh's condition series to its conditions now.
func (s *reportedSeries) reportConditions(mesh string, conds []metav1.Condition) {
	now := make([][2]string, 0, len(conds))
	for _, c := range conds {
		now = append(now, [2]string{c.Type, string(c.Status)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.conditions[mesh]
	if slices.Equal(before, now) {
		return
	}
	for _, c := range before {
		if !slices.Contains(now, c) {
			meshCondition.DeleteLabelValues(mesh, c[0], c[1])
		}
	}
	for _, c := range now {
		meshCondition.WithLabelValues(mesh, c[0], c[1]).Set(1)
	}
	s.conditions[mesh] = now
}

// reportServices counts, per member cluster, what of a mesh's services
// does not work there; nil (services not served) drops the series.
func (s *reportedSeries) reportServices(mesh string, out *services.Output) {
	now := notReadyCounts(out)
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.services[mesh]
	if maps.Equal(before, now) {
		return
	}
	for k := range before {
		if _, ok := now[k]; !ok {
			servicesNotReady.DeleteLabelValues(mesh, k[0], k[1])
		}
	}
	for k, v := range now {
		if old, ok := before[k]; !ok || old != v {
			servicesNotReady.WithLabelValues(mesh, k[0], k[1]).Set(v)
		}
	}
	if len(now) == 0 {
		delete(s.services, mesh)
		return
	}
	s.services[mesh] = now
}

// notReadyCounts is what kilo_mesh_services_not_ready shows of out: per
// cluster, its blocked imports and its exports not Ready.
func notReadyCounts(out *services.Output) map[[2]string]float64 {
	if out == nil {
		return nil
	}
	counts := map[[2]string]float64{}
	for _, c := range out.Clusters {
		blocked := 0
		for _, imp := range c.Imports {
			if imp.Blocked != "" {
				blocked++
			}
		}
		counts[[2]string{c.Name, "import"}] = float64(blocked)
		counts[[2]string{c.Name, "export"}] = 0
	}
	for _, e := range out.Exports {
		if !meta.IsStatusConditionTrue(e.Conditions, string(mcsv1beta1.ServiceExportConditionReady)) {
			counts[[2]string{e.Cluster, "export"}]++
		}
	}
	return counts
}

// forget drops the series of a mesh that is gone.
func (s *reportedSeries) forget(mesh string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conditions, mesh)
	delete(s.services, mesh)
	meshCondition.DeletePartialMatch(map[string]string{"mesh": mesh})
	servicesNotReady.DeletePartialMatch(map[string]string{"mesh": mesh})
}

// reset drops every series when a replica stops leading (see forgetGauges).
func (s *reportedSeries) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.conditions)
	clear(s.services)
	meshCondition.Reset()
	servicesNotReady.Reset()
}
