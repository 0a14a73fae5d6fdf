package reconciler

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Run records events, waits for the ClusterMesh cache and then, on the
// replica holding the Lease (or on every replica without --leader-elect),
// reconciles until ctx ends. A replica that loses the Lease stops writing
// at once and stands for election again. Member clusters are waited for
// mesh by mesh (see sync): one whose caches never sync holds up its own
// meshes, nobody else's.
func (r *Reconciler) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("reconciler")
	ctx = klog.NewContext(ctx, logger)
	sink := r.broadcaster.StartRecordingToSink(r.eventSink())
	defer sink.Stop()
	defer r.broadcaster.Shutdown()

	if !cache.WaitForNamedCacheSyncWithContext(ctx, r.meshes.HasSynced) {
		return ctx.Err()
	}
	// Nothing is decided before the plans' other inputs (the grants) are known.
	if !cache.WaitForNamedCacheSyncWithContext(ctx, r.planner.HasSynced) {
		return ctx.Err()
	}
	if !r.opts.LeaderElection.LeaderElect {
		r.lead(ctx)
		return nil
	}
	le := r.opts.LeaderElection
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		r.lease.CoreV1(), r.lease.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: r.identity})
	if err != nil {
		return fmt.Errorf("building the leader election lock: %w", err)
	}
	// The elector releases the Lease as soon as its context ends, without
	// waiting for OnStartedLeading to return: on its own context, a Lease
	// released on shutdown would let the next leader write while this
	// replica's last writes are still in flight. So the elector runs on a
	// context of its own, which ends only once the term has stopped.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceNamespace + "/" + le.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			// The term ends when the Lease is lost (termCtx) or the
			// reconciler stops (ctx).
			OnStartedLeading: func(termCtx context.Context) {
				termCtx, stop := context.WithCancel(termCtx)
				defer stop()
				defer context.AfterFunc(ctx, stop)()
				r.lead(termCtx)
			},
			OnStoppedLeading: func() { logger.Info("Stopped leading", "identity", r.identity) },
			OnNewLeader: func(id string) {
				logger.Info("Reconciler leader", "identity", id, "self", id == r.identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	go func() {
		<-ctx.Done()
		// lead holds term while its workers run: once it is ours, no
		// write of this replica is in flight, and the Lease may go.
		r.term.Lock()
		stopElector()
		r.term.Unlock()
	}()
	// Run returns when the Lease is lost or the elector stops; only the
	// latter ends the reconciler.
	for electorCtx.Err() == nil {
		elector.Run(electorCtx)
	}
	return nil
}

// lead reconciles for one leadership term, until ctx ends. Each term has
// its own queue, shut down at the end of the term so that no worker picks
// up another mesh after losing the Lease.
func (r *Reconciler) lead(ctx context.Context) {
	// The elector starts a term in a goroutine; a new term waits for the
	// previous one to have stopped.
	r.term.Lock()
	defer r.term.Unlock()
	logger := klog.FromContext(ctx)
	logger.Info("Started leading", "identity", r.identity, "workers", r.opts.Workers)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "clustermesh", MetricsProvider: queueMetrics{}})
	r.queue.Store(&q)
	r.leading.Store(true)
	r.enqueueAll()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.dispatch(ctx, q, &wg)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, func(context.Context) { r.enqueueAll() }, r.opts.ResyncPeriod)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.sweepLoop(ctx)
	}()

	<-ctx.Done()
	r.leading.Store(false)
	r.queue.Store(nil)
	q.ShutDown()
	wg.Wait()
	queueDepth.Set(0)
	forgetGauges()
	r.reported.reset()
	logger.Info("Stopped reconciling", "identity", r.identity)
}

// enqueueAll queues every mesh: at the start of a term, and as the safety
// net of the periodic resync.
func (r *Reconciler) enqueueAll() {
	for _, obj := range r.meshes.GetStore().List() {
		r.enqueueObject(obj)
	}
}

// dispatch hands the queue's meshes to passes until the term is over. At
// most Workers passes work at once; a pass waiting for its writes, which
// the fair writer runs in turns with other meshes', gives its worker up,
// so that a mesh with a small change is planned and written while other
// meshes' large passes are still being written.
func (r *Reconciler) dispatch(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.NamespacedName], passes *sync.WaitGroup) {
	workers := make(chan struct{}, r.opts.Workers)
	for {
		select {
		case workers <- struct{}{}:
		case <-ctx.Done():
			return
		}
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		passes.Add(1)
		go func() {
			defer passes.Done()
			var once sync.Once
			release := func() { once.Do(func() { <-workers }) }
			defer release()
			r.process(context.WithValue(ctx, workerKey{}, release), q, key)
		}()
	}
}

// process reconciles one mesh.
func (r *Reconciler) process(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.NamespacedName], key types.NamespacedName) {
	defer q.Done(key)
	if ctx.Err() != nil {
		return
	}
	change, changed := r.clock.take(key)
	trace := &passTrace{change: change, changed: changed, start: time.Now()}
	res, err := r.sync(ctx, key, trace)
	result := "success"
	if err != nil {
		result = "error"
	}
	end := time.Now()
	reconcileDuration.WithLabelValues(result).Observe(end.Sub(trace.start).Seconds())
	trace.finish(key, end, result)
	if err != nil {
		if apierrors.IsConflict(err) {
			// The cache was behind a write; the retry sees the newer object.
			klog.FromContext(ctx).V(2).Info("Reconcile raced a write; retrying", "mesh", key, "err", err)
		} else {
			klog.FromContext(ctx).Error(err, "Reconcile failed; retrying", "mesh", key, "retries", q.NumRequeues(key))
		}
		q.AddRateLimited(key)
		return
	}
	q.Forget(key)
	if res.requeueAfter > 0 {
		q.AddAfter(key, res.requeueAfter)
	}
}
