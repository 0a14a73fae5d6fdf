package reconciler

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// FieldManager is the field manager of every write: Peers and services
// objects on member clusters, status and finalizer of ClusterMeshes.
const FieldManager = "kilo-mesh-apiserver"

// Finalizer keeps a deleted ClusterMesh until what it wrote on its member
// clusters is removed.
const Finalizer = "mesh.kilo.squat.ai/peers"

// Planner computes the plan of a mesh from the member-cluster caches and
// the grants; the views use the same one, so what users preview is what
// gets applied. It tells which meshes' inputs changed, whatever the input,
// and whether it has read its inputs once.
type Planner interface {
	Plan(mesh *meshv1alpha1.ClusterMesh) (*planner.Plan, error)
	AddChangeHandler(f func(types.NamespacedName))
	HasSynced() bool
	// Invalidate marks a mesh's plan as older than its inputs, for a
	// change the reconciler itself made and needs no pass for.
	Invalidate(key types.NamespacedName)
}

// Config is what the reconciler is built from.
type Config struct {
	Options Options
	// Meshes is the shared ClusterMesh informer of the server.
	Meshes cache.SharedIndexInformer
	// Clusters holds the member-cluster caches and clients.
	Clusters Clusters
	// Planner is the views' planner.
	Planner Planner
	// MeshREST talks to the server's own mesh.kilo.squat.ai/v1alpha1 API
	// (the loopback client): status and finalizer writes go through the
	// full request path, so admission and managed fields apply to them.
	MeshREST rest.Interface
	// Kube is the local cluster: the Events, and the Lease when Lease is nil.
	Kube kubernetes.Interface
	// Lease is the local cluster's client for the Lease alone, so that a
	// renewal never waits behind another request's client-side rate limit.
	Lease kubernetes.Interface
	// Identity names this replica in the Lease.
	Identity string
	// Services computes multi-cluster services (the plan cache, like
	// Planner); nil: no services are written.
	Services ServicesPlanner
	// Installation names this installation on the Peers it writes
	// (planner.LabelInstallation, the plan cache's); its Peers whose mesh
	// storage does not hold are removed. Empty: only the Peers of meshes
	// seen deleted while leading are.
	Installation string
}

// Reconciler is the controller of ClusterMeshes.
type Reconciler struct {
	opts         Options
	meshes       cache.SharedIndexInformer
	clusters     Clusters
	planner      Planner
	services     ServicesPlanner
	meshAPI      meshAPI
	kube         kubernetes.Interface
	lease        kubernetes.Interface
	identity     string
	installation string

	broadcaster record.EventBroadcaster
	recorder    *eventGate
	events      *eventFilter
	// finalized: the meshes whose finalizer ran here.
	finalized finalizedHere
	// departedHere: the departures of entries this process completed.
	departedHere departedHere
	// swept: the connections whose services objects the sweep listed.
	swept sweep
	// written and writtenSvc remember this replica's writes, whose echoes
	// in the member caches start no pass.
	written    *writtenPeers
	writtenSvc *writtenServices
	svcCurrent *servicesCurrent
	writer     *fairWriter
	series     *clusterSeries
	reported   *reportedSeries
	clock      *changeClock

	// queue is the current leadership term's queue; nil while not leading.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[types.NamespacedName]]
	// leading is true while this replica holds the Lease.
	leading atomic.Bool
	// term is held by the running leadership term.
	term sync.Mutex
}

// New builds the reconciler and registers its event handlers; Run starts it.
func New(cfg Config) (*Reconciler, error) {
	if errs := cfg.Options.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.Meshes == nil || cfg.Clusters == nil || cfg.Planner == nil || cfg.MeshREST == nil || cfg.Kube == nil {
		return nil, errors.New("reconciler: Meshes, Clusters, Planner, MeshREST and Kube are required")
	}
	registerMetrics()
	scheme := runtime.NewScheme()
	if err := meshv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the event scheme: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: eventBurst, QPS: eventQPS}))
	r := &Reconciler{
		opts:         cfg.Options,
		meshes:       cfg.Meshes,
		clusters:     cfg.Clusters,
		planner:      cfg.Planner,
		services:     cfg.Services,
		meshAPI:      meshAPI{client: cfg.MeshREST},
		kube:         cfg.Kube,
		lease:        cfg.Lease,
		identity:     cfg.Identity,
		installation: cfg.Installation,
		broadcaster:  broadcaster,
		recorder:     newEventGate(broadcaster.NewRecorder(scheme, corev1.EventSource{Component: eventComponent}), clock.RealClock{}),
		events:       newEventFilter(),
		written:      newWrittenPeers(),
		writtenSvc:   newWrittenServices(),
		svcCurrent:   newServicesCurrent(),
		writer:       newFairWriter(),
		series:       newClusterSeries(),
		reported:     newReportedSeries(),
		clock:        newChangeClock(),
	}
	if r.lease == nil {
		r.lease = cfg.Kube
	}
	if _, err := cfg.Meshes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.meshChanged,
		UpdateFunc: r.meshUpdated,
		DeleteFunc: r.meshDeleted,
	}); err != nil {
		return nil, fmt.Errorf("watching ClusterMeshes: %w", err)
	}
	cfg.Planner.AddChangeHandler(r.changed)
	cfg.Clusters.IgnoreOwnWrites(ownWrites{r})
	// Connections an entry or a mesh stops using are held as long as
	// removing what the mesh wrote there is worked on.
	cfg.Clusters.KeepFor(DepartureHold(r.opts))
	return r, nil
}

// Leading reports whether this replica holds the Lease and reconciles.
func (r *Reconciler) Leading() bool { return r.leading.Load() }

func (r *Reconciler) enqueue(key types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		(*q).Add(key)
	}
}

// changed queues a mesh one of whose inputs changed, and starts the clock
// of the change's latency.
func (r *Reconciler) changed(key types.NamespacedName) {
	if r.queue.Load() == nil {
		return
	}
	r.clock.note(key)
	r.enqueue(key)
}

func (r *Reconciler) enqueueObject(obj any) {
	if key, ok := objectKey(obj); ok {
		r.enqueue(key)
	}
}

func (r *Reconciler) meshChanged(obj any) {
	if key, ok := objectKey(obj); ok {
		r.changed(key)
	}
}

func objectKey(obj any) (types.NamespacedName, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	mesh, ok := obj.(*meshv1alpha1.ClusterMesh)
	if !ok {
		klog.ErrorS(nil, "Unexpected object in the ClusterMesh informer", "type", fmt.Sprintf("%T", obj))
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: mesh.Namespace, Name: mesh.Name}, true
}

// meshUpdated ignores updates that only touch the status: the reconciler
// writes it itself, and reacting to its own writes would plan every mesh
// twice. The periodic resync restores a status someone else changed; a
// change of status.departedClusters is looked at at once, since a user
// removes a stuck departure by hand there.
func (r *Reconciler) meshUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*meshv1alpha1.ClusterMesh)
	n, ok2 := newObj.(*meshv1alpha1.ClusterMesh)
	if ok1 && ok2 && o.Generation == n.Generation && o.UID == n.UID &&
		o.DeletionTimestamp.Equal(n.DeletionTimestamp) && slices.Equal(o.Finalizers, n.Finalizers) &&
		len(o.Status.DepartedClusters) == len(n.Status.DepartedClusters) {
		return
	}
	r.meshChanged(newObj)
}

// eventSink writes events to the local cluster, in the mesh's namespace.
func (r *Reconciler) eventSink() record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: r.kube.CoreV1().Events("")}
}
