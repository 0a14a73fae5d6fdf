package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// RenewNodesReady sets the Ready condition of the named Nodes of cluster i
// True with a fresh heartbeat, as their kubelets would: without it, the
// node lifecycle controller marks a Node Unknown after its grace period
// and the Pods on it unready, which empties the Services' EndpointSlices.
func (e *Env) RenewNodesReady(ctx context.Context, cluster int, names ...string) error {
	nodes := e.Client(cluster, UserAdmin).CoreV1().Nodes()
	var errs []error
	for _, name := range names {
		// A conflict is another writer of the Node (admission's taint
		// removal, a test): read it again.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := nodes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			for k := range n.Status.Conditions {
				if c := &n.Status.Conditions[k]; c.Type == corev1.NodeReady {
					if c.Status != corev1.ConditionTrue {
						c.Status, c.LastTransitionTime = corev1.ConditionTrue, now
					}
					c.LastHeartbeatTime, c.Reason, c.Message = now, "KubeletReady", "kubelet is posting ready status (simulated by the kilo-mesh test framework)"
				}
			}
			_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("renewing node %s on cluster %d: %w", name, cluster, err))
		}
	}
	return errors.Join(errs...)
}

// KeepNodesReady renews the named Nodes of cluster i every interval until
// ctx ends, so that a test longer than the node lifecycle controller's
// grace period keeps their Pods ready. Errors go to the environment's log.
// Run it in a goroutine.
func (e *Env) KeepNodesReady(ctx context.Context, interval time.Duration, cluster int, names ...string) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if e.ClusterRunning(cluster) {
			if err := e.RenewNodesReady(ctx, cluster, names...); err != nil && ctx.Err() == nil {
				e.log("renewing the Ready condition of nodes %v on cluster %d: %v", names, cluster, err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
