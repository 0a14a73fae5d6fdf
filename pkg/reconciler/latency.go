package reconciler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// The stages of a change's way from its event to the member clusters, the
// values of the stage label of kilo_mesh_change_stage_duration_seconds.
const (
	// StageQueued: the change reported -> its pass starts.
	StageQueued = "queued"
	// StagePlanned: the pass starts -> the plan (and its diff) is ready.
	StagePlanned = "planned"
	// StageDiffed: the plan is ready -> every write it asks for is handed to
	// the writer (ownership checks against the cache, the writes' memory).
	StageDiffed = "diffed"
	// StageWritten: the writes handed over -> the last one answered.
	StageWritten = "written"
	// StageRecorded: the last write answered -> the pass has recorded its
	// outcome (status, events) and the mesh is free for its next pass.
	StageRecorded = "recorded"
	// StageConfirmed: one write answered -> the member cache shows it
	// (observed per write, when its event arrives).
	StageConfirmed = "confirmed"
)

// traceVerbosity is the klog level of the per-pass latency trace.
const traceVerbosity = 4

// changeClock remembers, per mesh, the changes reported since the mesh's
// last pass started: the first one's time gives the queued stage, and an id
// keys the pass in the debug trace.
type changeClock struct {
	now func() time.Time

	mu      sync.Mutex
	last    uint64
	pending map[types.NamespacedName]pendingChange
}

// pendingChange is what a pass takes on: the changes reported for its mesh
// since the previous pass started.
type pendingChange struct {
	// id is the first change's; ids grow by one per change reported.
	id    uint64
	first time.Time
	count int
}

func newChangeClock() *changeClock {
	return &changeClock{now: time.Now, pending: map[types.NamespacedName]pendingChange{}}
}

// note records a change of mesh's inputs.
func (c *changeClock) note(mesh types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last++
	p, ok := c.pending[mesh]
	if !ok {
		p = pendingChange{id: c.last, first: c.now()}
	}
	p.count++
	c.pending[mesh] = p
}

// take hands a starting pass the changes it covers; changes reported from
// now on belong to the next pass.
func (c *changeClock) take(mesh types.NamespacedName) (pendingChange, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[mesh]
	delete(c.pending, mesh)
	return p, ok
}

// forget drops the changes of a mesh that is gone.
func (c *changeClock) forget(mesh types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, mesh)
}

// passTrace is where one pass's time went.
type passTrace struct {
	change   pendingChange
	changed  bool // the pass was started by a change, not a timer or a resync
	start    time.Time
	planned  time.Time // zero: the pass did not plan
	handed   time.Time // the last target's writes handed to the writer
	answered time.Time // the last write answered
	writes   int
}

// wrote folds one target's writes into the pass.
func (t *passTrace) wrote(res targetResult) {
	if res.writes == 0 {
		return
	}
	t.writes += res.writes
	if res.handed.After(t.handed) {
		t.handed = res.handed
	}
	if res.answered.After(t.answered) {
		t.answered = res.answered
	}
}

// finish feeds the pass into the stage histograms and the debug trace.
func (t *passTrace) finish(mesh types.NamespacedName, end time.Time, result string) {
	observe := func(stage string, from, to time.Time) time.Duration {
		d := to.Sub(from)
		changeStageDuration.WithLabelValues(stage).Observe(d.Seconds())
		return d
	}
	var queued, planned, diffed, written, recorded time.Duration
	if t.changed {
		queued = observe(StageQueued, t.change.first, t.start)
	}
	if !t.planned.IsZero() {
		planned = observe(StagePlanned, t.start, t.planned)
	}
	if t.writes > 0 {
		diffed = observe(StageDiffed, t.planned, t.handed)
		written = observe(StageWritten, t.handed, t.answered)
		recorded = observe(StageRecorded, t.answered, end)
		if t.changed {
			changeToWrite.Observe(t.answered.Sub(t.change.first).Seconds())
		}
	}
	logger := klog.Background().V(traceVerbosity)
	if !logger.Enabled() {
		return
	}
	logger.Info("Reconcile trace", "mesh", mesh, "change", t.change.id, "changes", t.change.count,
		"result", result, "writes", t.writes, "queued", queued, "planned", planned, "diffed", diffed,
		"written", written, "recorded", recorded, "total", end.Sub(t.start)+queued)
}

// ownWrite is the member caches' echo filter: a Peer that shows exactly
// what a write of this replica left needs no pass (the write's pass counted
// it as done already), only a plan that knows the cache moved on. It
// confirms the write.
func (r *Reconciler) ownWrite(conn string, peer *kilov1alpha1.Peer) bool {
	key, answered, ok := r.written.shows(conn, peer)
	if !ok {
		return false
	}
	r.planner.Invalidate(key.mesh)
	if answered.IsZero() {
		// Shown before the answer came: the answer records it.
		return true
	}
	changeStageDuration.WithLabelValues(StageConfirmed).Observe(time.Since(answered).Seconds())
	klog.Background().V(traceVerbosity).Info("Write confirmed", "mesh", key.mesh, "cluster", key.cluster, "peer", peer.Name,
		"confirmed", time.Since(answered))
	return true
}

// confirmedEarly records a write the member cache showed before its
// answer came.
func confirmedEarly() {
	changeStageDuration.WithLabelValues(StageConfirmed).Observe(0)
}
