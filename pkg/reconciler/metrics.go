package reconciler

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

const metricsNamespace = "kilo_mesh"

// The reconciler's metrics, served at /metrics by the generic server. Mesh
// labels are namespace/name; cluster labels are spec.clusters[].name.
var (
	reconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Name:           "reconcile_duration_seconds",
		Help:           "Time one reconcile pass of a ClusterMesh takes (plan, Peer writes, status), by result.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	// changeStageDuration is the latency budget of a change: one
	// observation per stage a pass went through (see the Stage constants);
	// passes without writes stop at planned.
	changeStageDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Name:           "change_stage_duration_seconds",
		Help:           "Time a reconcile pass spends in each stage of a change's way to the member clusters: queued, planned, diffed, written, confirmed.",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"stage"})

	changeToWrite = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Name:           "change_to_write_seconds",
		Help:           "Time from the first change a pass covers being reported to the last Peer write of that pass answered.",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 16),
		StabilityLevel: metrics.ALPHA,
	})

	queueDepth = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "queue_depth",
		Help:           "ClusterMeshes waiting to be reconciled.",
		StabilityLevel: metrics.ALPHA,
	})

	peersManaged = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "peers_managed",
		Help:           "Peers a ClusterMesh holds on a member cluster exactly as planned, after the last reconcile pass.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "cluster"})

	// peersDesired is peersManaged's target: an alert on the two differing
	// for a while tells that a mesh's Peers are not as planned.
	peersDesired = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "peers_desired",
		Help:           "Peers the plan of a ClusterMesh puts on a member cluster, at the last reconcile pass that could compare them with the cluster's.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "cluster"})

	applyErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Name:           "apply_errors_total",
		Help:           "Failed Peer writes (apply or delete) on a member cluster.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "cluster"})

	clusterReachable = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "cluster_reachable",
		Help:           "1 when a member cluster of a ClusterMesh answered at the last reconcile pass, else 0.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "cluster"})

	peerWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Name:           "peer_writes_total",
		Help:           "Peer writes sent to member clusters, by operation (apply, delete); zero growth in steady state.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "cluster", "operation"})

	credentialExpiry = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "member_credential_expiry_timestamp_seconds",
		Help:           "When the credential of a member cluster's kubeconfig expires, in seconds since the epoch; absent when it states no expiry.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "cluster"})

	// meshCondition repeats a mesh's status conditions, one series per
	// condition at its current status, so that alerts need not read the
	// API: a mesh not Ready, or a departure stuck, for long.
	meshCondition = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "condition",
		Help:           "1 for each status condition of a ClusterMesh at its current status (True, False, Unknown), as of the last reconcile pass.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "condition", "status"})

	servicesNotReady = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "services_not_ready",
		Help:           "Multi-cluster services of a ClusterMesh that do not work on a member cluster: kind export, its ServiceExports whose Ready condition is not True; kind import, its imports blocked.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mesh", "cluster", "kind"})

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reconcileDuration, changeStageDuration, changeToWrite, queueDepth, peersManaged, peersDesired, applyErrors, clusterReachable, peerWrites, credentialExpiry,
			meshCondition, servicesNotReady)
	})
}

// forgetMeshMetrics drops the series of a mesh that is gone, so that
// deleted meshes do not linger in scrapes (its conditions and services:
// reportedSeries.forget).
func forgetMeshMetrics(mesh string) {
	for _, v := range meshGauges() {
		v.DeletePartialMatch(map[string]string{"mesh": mesh})
	}
	applyErrors.DeletePartialMatch(map[string]string{"mesh": mesh})
	peerWrites.DeletePartialMatch(map[string]string{"mesh": mesh})
}

// forgetClusterMetrics drops the series of one cluster of a mesh; its
// services series go with the mesh's next report (reportedSeries owns
// them, and a deletion behind its back would leave its memory wrong).
func forgetClusterMetrics(mesh, cluster string) {
	labels := map[string]string{"mesh": mesh, "cluster": cluster}
	for _, v := range meshGauges() {
		v.DeletePartialMatch(labels)
	}
	applyErrors.DeletePartialMatch(labels)
	peerWrites.DeletePartialMatch(labels)
}

// clusterSeries remembers the clusters of each mesh at its last pass, so
// that the series of a cluster that left the mesh (renamed, removed) go
// with it: a mesh never has series of more clusters than its spec lists.
type clusterSeries struct {
	mu sync.Mutex
	m  map[string][]string
}

func newClusterSeries() *clusterSeries { return &clusterSeries{m: map[string][]string{}} }

// keep records the clusters mesh lists now and drops the series of those
// it listed at its last pass and no longer does.
func (s *clusterSeries) keep(mesh string, clusters []string) {
	s.mu.Lock()
	before := s.m[mesh]
	s.m[mesh] = clusters
	s.mu.Unlock()
	for _, c := range before {
		if !slices.Contains(clusters, c) {
			forgetClusterMetrics(mesh, c)
		}
	}
}

// forget drops what is remembered of a mesh that is gone.
func (s *clusterSeries) forget(mesh string) {
	s.mu.Lock()
	delete(s.m, mesh)
	s.mu.Unlock()
}

// meshGauges are the per-mesh gauges: what the last pass found, which only
// the leader knows.
func meshGauges() []*metrics.GaugeVec {
	return []*metrics.GaugeVec{peersManaged, peersDesired, clusterReachable, credentialExpiry}
}

// forgetGauges drops every per-mesh gauge when a replica stops leading:
// they would go stale while another replica reconciles, and a scrape of
// both replicas would show the old leader's figures next to the new
// one's. Counters stay, as counters do. The conditions and services go
// with reportedSeries.reset.
func forgetGauges() {
	for _, v := range meshGauges() {
		v.Reset()
	}
}

// queueMetrics feeds the work queue's depth into kilo_mesh_queue_depth and
// drops the queue's other figures, which reconcile_duration covers.
type queueMetrics struct{}

var _ workqueue.MetricsProvider = queueMetrics{}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

func (queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric { return queueDepth }
func (queueMetrics) NewAddsMetric(string) workqueue.CounterMetric {
	return noopMetric{}
}
func (queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return noopMetric{} }
func (queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noopMetric{}
}
func (queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return noopMetric{} }

// reportCredentials exports the expiry of every member credential that
// states one, so that alerts can be set on it at any distance, and drops
// the series of a credential that no longer states one. states is nil when
// the pass had no plan: nothing new is known then.
func reportCredentials(mesh *meshv1alpha1.ClusterMesh, states map[string]clusters.ClusterState) {
	name := mesh.Namespace + "/" + mesh.Name
	for cluster, st := range states {
		if exp := st.CredentialExpiry; !exp.IsZero() {
			credentialExpiry.WithLabelValues(name, cluster).Set(float64(exp.Unix()))
		} else {
			credentialExpiry.DeleteLabelValues(name, cluster)
		}
	}
}

// reportPass feeds a pass into the per-mesh metrics: its Peers, member
// credentials and conditions.
func (r *Reconciler) reportPass(mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan, outcomes map[string]targetOutcome,
	states map[string]clusters.ClusterState, conds []metav1.Condition) {
	r.report(mesh, plan, outcomes)
	reportCredentials(mesh, states)
	r.reported.reportConditions(mesh.Namespace+"/"+mesh.Name, conds)
}

// report feeds a pass's Peers into the per-mesh metrics.
func (r *Reconciler) report(mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan, outcomes map[string]targetOutcome) {
	if plan == nil {
		return
	}
	name := mesh.Namespace + "/" + mesh.Name
	for _, tp := range plan.View.Targets {
		if tp.DiffState == meshv1alpha1.DiffStateComputed {
			peersDesired.WithLabelValues(name, tp.Cluster).Set(float64(tp.DesiredPeers))
		}
	}
	for _, c := range plan.View.Clusters {
		// From 0, so that the first failure is an increase.
		applyErrors.WithLabelValues(name, c.Name).Add(0)
		v := 0.0
		if c.Reachable {
			v = 1
		}
		clusterReachable.WithLabelValues(name, c.Name).Set(v)
		if out, ok := outcomes[c.Name]; ok && out.reconciled {
			peersManaged.WithLabelValues(name, c.Name).Set(float64(out.applied))
		}
	}
}
