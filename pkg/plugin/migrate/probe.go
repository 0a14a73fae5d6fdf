package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

// AnnotationProbe is set on the predecessor's ClusterMesh by the probe, so
// that the probe is an update event even when there is no finalizer to
// remove.
const AnnotationProbe = "mesh.kilo.squat.ai/operator-probe"

// DefaultProbeWindow is how long the probe waits for the predecessor to
// react. Its controller reacts to an update of its ClusterMesh within
// milliseconds; the window also covers a standby replica taking over the
// leader lease (15 s) and a restart of the process (it restarts itself on
// Secret changes).
const DefaultProbeWindow = 20 * time.Second

// checkPredecessorStopped makes sure the predecessor operator is not running
// before its Peers are handed over: a running one would fight the server
// over them, and delete them as orphans once their labels name no mesh.
//
// Two checks, on the host cluster where that operator runs:
//
//  1. Its leader-election Lease (f27237f1.squat.ai in the mesh's namespace):
//     held and renewed within its duration means a replica runs. Leader
//     election is optional, so a missing Lease proves nothing.
//  2. The decisive one: the first thing its reconciler does with a
//     ClusterMesh, on every event, is to put its finalizer
//     kilo-clustermesh.io/cleanup on it. The probe removes the finalizer
//     (and sets an annotation, so that there is an update event either
//     way) and watches for window: a finalizer that comes back means the
//     operator runs. One that stays away is what the migration wants
//     anyway: deleting the old ClusterMesh then never triggers the
//     operator's cleanup of its Peers.
func checkPredecessorStopped(ctx context.Context, w io.Writer, host *cli.Clients, ns, name string, window time.Duration, now func() time.Time) error {
	lease, err := host.Kube.CoordinationV1().Leases(ns).Get(ctx, PredecessorLease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading the predecessor's leader Lease %s/%s: %w", ns, PredecessorLease, err)
	case lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && lease.Spec.RenewTime != nil && lease.Spec.LeaseDurationSeconds != nil:
		expires := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
		if now().Before(expires) {
			return fmt.Errorf("the predecessor operator is running: %s holds its leader Lease %s/%s, renewed at %s; stop it (scale its Deployment to 0) and run import --adopt again",
				*lease.Spec.HolderIdentity, ns, PredecessorLease, lease.Spec.RenewTime.UTC().Format(time.RFC3339))
		}
	}

	res := host.Dynamic.Resource(PredecessorResource).Namespace(ns)
	old, err := res.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(w, "The predecessor's ClusterMesh %s/%s is not on the host cluster: no operator reconciles it.\n", ns, name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the predecessor's ClusterMesh %s/%s: %w", ns, name, err)
	}
	finalizers := slices.DeleteFunc(old.GetFinalizers(), func(f string) bool { return f == PredecessorFinalizer })
	stamp := now().UTC().Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": old.GetResourceVersion(),
		"finalizers":      append([]string{}, finalizers...),
		"annotations":     map[string]any{AnnotationProbe: stamp},
	}})
	if err != nil {
		return err
	}
	if _, err := res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cli.FieldManager}); err != nil {
		return fmt.Errorf("probing for the predecessor operator (removing its finalizer from %s/%s): %w", ns, name, err)
	}
	fmt.Fprintf(w, "Checking that the predecessor operator is stopped: removed its finalizer %s from ClusterMesh %s/%s, watching %s for it to come back...\n",
		PredecessorFinalizer, ns, name, window)
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		cur, err := res.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the predecessor's ClusterMesh %s/%s disappeared during the probe: is the operator deleting it?", ns, name)
		}
		if err != nil {
			return fmt.Errorf("reading the predecessor's ClusterMesh %s/%s: %w", ns, name, err)
		}
		if slices.Contains(cur.GetFinalizers(), PredecessorFinalizer) {
			return fmt.Errorf("the predecessor operator is running: it put its finalizer %s back on %s/%s at once; stop it (scale its Deployment to 0) and run import --adopt again",
				PredecessorFinalizer, ns, name)
		}
	}
	fmt.Fprintf(w, "The predecessor operator is stopped: the finalizer stayed away for %s.\n", window)
	return nil
}
