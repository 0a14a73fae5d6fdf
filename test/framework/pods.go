package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadyPod is a Pod of a cluster without kubelets. CreateReadyPod gives it
// its IP and readiness through the status subresource, as a kubelet would,
// so that the cluster's own endpointslice controller lists it in the
// EndpointSlices of the Services that select it.
type ReadyPod struct {
	Name string
	// Node must exist: the endpointslice controller skips a Pod of a
	// missing Node, and the pod garbage collector deletes it.
	Node   string
	IP     string
	Labels map[string]string
	// NotReady sets the Ready condition False.
	NotReady bool
}

// CreateReadyPod creates p in namespace ns of cluster i as the admin, then
// sets its status. It tolerates the taints of a Node that no kubelet keeps
// Ready, so that it is never evicted during a test.
func (e *Env) CreateReadyPod(ctx context.Context, cluster int, ns string, p ReadyPod) (*corev1.Pod, error) {
	pods := e.Client(cluster, UserAdmin).CoreV1().Pods(ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns, Labels: p.Labels},
		Spec: corev1.PodSpec{
			NodeName:                     p.Node,
			AutomountServiceAccountToken: new(bool),
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			},
		},
	}
	var created *corev1.Pod
	// The ServiceAccount admission plugin refuses Pods until the
	// namespace's default ServiceAccount exists, which the controller
	// creates soon after the namespace.
	err := poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) error {
		var err error
		created, err = pods.Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating pod %s/%s on cluster %d: %w", ns, p.Name, cluster, err)
	}
	ready := corev1.ConditionTrue
	if p.NotReady {
		ready = corev1.ConditionFalse
	}
	now := metav1.Now()
	created.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		PodIP:     p.IP,
		PodIPs:    []corev1.PodIP{{IP: p.IP}},
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
		},
	}
	updated, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting the status of pod %s/%s on cluster %d: %w", ns, p.Name, cluster, err)
	}
	return updated, nil
}
