package framework

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
)

// defaultGranularity is the kilo.squat.ai/granularity kg writes by default.
const defaultGranularity = "location"

// NewWireGuardKey returns a fresh X25519 key pair, base64 (standard encoding)
// as WireGuard and Kilo write them.
func NewWireGuardKey() (privateKey, publicKey string, err error) {
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(key.Bytes()), base64.StdEncoding.EncodeToString(key.PublicKey().Bytes()), nil
}

// KiloNode describes a Node as Kilo's agent (kg) would leave it. Zero values
// mean "absent" unless stated otherwise.
type KiloNode struct {
	Name string
	// Location sets kilo.squat.ai/location.
	Location string
	// RegionLabel sets topology.kubernetes.io/region.
	RegionLabel string
	// Endpoint is the kg-written endpoint annotation, host:port.
	Endpoint string
	// ForceEndpoint and ClusterMeshEndpoint set the user overrides.
	ForceEndpoint       string
	ClusterMeshEndpoint string
	// InternalIP is the internal-ip annotation with its interface mask, e.g.
	// 192.168.1.10/24. It also becomes the node's InternalIP address.
	InternalIP string
	// ForceInternalIP, if non-nil, sets force-internal-ip (may be "" or "-").
	ForceInternalIP *string
	// WireGuardIP is set on leaders only, e.g. 10.4.0.1/16. Kg writes ""
	// on other nodes; so does this helper.
	WireGuardIP string
	// Key is the public key; empty: a fresh one (see NewWireGuardKey).
	Key string
	// NoKey leaves the key annotation out.
	NoKey bool
	// PodCIDR is spec.podCIDR; PodCIDRs are further entries of
	// spec.podCIDRs (PodCIDR is always first).
	PodCIDR  string
	PodCIDRs []string
	// Leader sets the kilo.squat.ai/leader annotation.
	Leader bool
	// Granularity: default "location"; "-" leaves the annotation out.
	Granularity string
	// PersistentKeepalive sets persistent-keepalive if > 0.
	PersistentKeepalive int
	// AllowedLocationIPs sets allowed-location-ips (comma-joined).
	AllowedLocationIPs []string
	// ExternalIP adds an ExternalIP to status.addresses.
	ExternalIP string
	// LastSeen sets last-seen; zero: now.
	LastSeen time.Time
	// NotReady sets the node's Ready condition to False (Kilo itself only
	// looks at last-seen).
	NotReady bool
	// Labels and Annotations are added as given.
	Labels      map[string]string
	Annotations map[string]string
}

// Build returns the Node object (with status) for k.
func (k KiloNode) Build() (*corev1.Node, error) {
	if k.Name == "" {
		return nil, fmt.Errorf("KiloNode without a name")
	}
	ann := map[string]string{}
	labels := map[string]string{
		"kubernetes.io/hostname": k.Name,
		"kubernetes.io/os":       "linux",
	}
	key := k.Key
	if key == "" && !k.NoKey {
		var err error
		if _, key, err = NewWireGuardKey(); err != nil {
			return nil, err
		}
	}
	if !k.NoKey {
		ann[kilov1alpha1.AnnotationKey] = key
	}
	set := func(name, value string) {
		if value != "" {
			ann[name] = value
		}
	}
	set(kilov1alpha1.AnnotationEndpoint, k.Endpoint)
	set(kilov1alpha1.AnnotationForceEndpoint, k.ForceEndpoint)
	set(kilov1alpha1.AnnotationClusterMeshEndpoint, k.ClusterMeshEndpoint)
	set(kilov1alpha1.AnnotationLocation, k.Location)
	ann[kilov1alpha1.AnnotationInternalIP] = k.InternalIP
	ann[kilov1alpha1.AnnotationWireGuardIP] = k.WireGuardIP
	if k.ForceInternalIP != nil {
		ann[kilov1alpha1.AnnotationForceInternalIP] = *k.ForceInternalIP
	}
	if k.Leader {
		ann[kilov1alpha1.AnnotationLeader] = "true"
	}
	switch k.Granularity {
	case "":
		ann[kilov1alpha1.AnnotationGranularity] = defaultGranularity
	case "-":
	default:
		ann[kilov1alpha1.AnnotationGranularity] = k.Granularity
	}
	if k.PersistentKeepalive > 0 {
		ann[kilov1alpha1.AnnotationPersistentKeepalive] = strconv.Itoa(k.PersistentKeepalive)
	}
	if len(k.AllowedLocationIPs) > 0 {
		ann[kilov1alpha1.AnnotationAllowedLocationIPs] = strings.Join(k.AllowedLocationIPs, ",")
	}
	lastSeen := k.LastSeen
	if lastSeen.IsZero() {
		lastSeen = time.Now()
	}
	ann[kilov1alpha1.AnnotationLastSeen] = strconv.FormatInt(lastSeen.Unix(), 10)
	if k.RegionLabel != "" {
		labels[corev1.LabelTopologyRegion] = k.RegionLabel
	}
	for n, v := range k.Labels {
		labels[n] = v
	}
	for n, v := range k.Annotations {
		ann[n] = v
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.Name, Labels: labels, Annotations: ann},
	}
	if k.PodCIDR != "" {
		node.Spec.PodCIDR = k.PodCIDR
		node.Spec.PodCIDRs = append([]string{k.PodCIDR}, k.PodCIDRs...)
	}

	addresses := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: k.Name}}
	if k.InternalIP != "" {
		ip, _, err := net.ParseCIDR(k.InternalIP)
		if err != nil {
			return nil, fmt.Errorf("node %s: internal IP %q: %w", k.Name, k.InternalIP, err)
		}
		addresses = append([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip.String()}}, addresses...)
	}
	if k.ExternalIP != "" {
		addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: k.ExternalIP})
	}
	now := metav1.Now()
	ready := corev1.ConditionTrue
	reason, msg := "KubeletReady", "kubelet is posting ready status (simulated by the kilo-mesh test framework)"
	if k.NotReady {
		ready, reason, msg = corev1.ConditionFalse, "KubeletNotReady", "simulated not ready"
	}
	node.Status = corev1.NodeStatus{
		Addresses: addresses,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: reason, Message: msg,
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          KubeVersion,
			OperatingSystem:         "linux",
			Architecture:            "amd64",
			ContainerRuntimeVersion: "containerd://2.0.0",
		},
	}
	return node, nil
}

// CreateKiloNode creates the Node on cluster i, then sets its status
// (addresses, Ready condition) through the status subresource, as no kubelet
// runs. It returns the Node as stored.
func (e *Env) CreateKiloNode(ctx context.Context, cluster int, k KiloNode) (*corev1.Node, error) {
	node, err := k.Build()
	if err != nil {
		return nil, err
	}
	nodes := e.Client(cluster, UserAdmin).CoreV1().Nodes()
	status := node.Status
	node.Status = corev1.NodeStatus{}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating node %s on cluster %d: %w", k.Name, cluster, err)
	}
	updated, err := SetNodeStatus(ctx, nodes, created, status, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting status of node %s on cluster %d: %w", k.Name, cluster, err)
	}
	if k.NotReady {
		return updated, nil
	}
	// Admission taints every new Node not-ready; kube-controller-manager's
	// node lifecycle controller lifts it once the node is Ready, in its own
	// time: lift it now, so that the Node is as a kubelet leaves it.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var taints []corev1.Taint
		for _, t := range updated.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				taints = append(taints, t)
			}
		}
		if len(taints) == len(updated.Spec.Taints) {
			return nil
		}
		updated.Spec.Taints = taints
		result, err := nodes.Update(ctx, updated, metav1.UpdateOptions{})
		if err == nil {
			updated = result
		} else if fresh, getErr := nodes.Get(ctx, k.Name, metav1.GetOptions{}); getErr == nil {
			updated = fresh
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("removing the not-ready taint of node %s on cluster %d: %w", k.Name, cluster, err)
	}
	return updated, nil
}

// SetNodeStatus sets the status of a Node just created, reading it again
// when kube-controller-manager changed it in between (its TTL and node
// lifecycle controllers write every new Node).
func SetNodeStatus(ctx context.Context, nodes corev1client.NodeInterface, created *corev1.Node, status corev1.NodeStatus, opts metav1.UpdateOptions) (*corev1.Node, error) {
	node := created
	var updated *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node.Status = status
		var err error
		if updated, err = nodes.UpdateStatus(ctx, node, opts); err != nil {
			if fresh, getErr := nodes.Get(ctx, created.Name, metav1.GetOptions{}); getErr == nil {
				node = fresh
			}
		}
		return err
	})
	return updated, err
}

// AnnotateNode merge-patches annotations onto node name of cluster i (an
// empty value sets the annotation to "", it does not remove it).
func (e *Env) AnnotateNode(ctx context.Context, cluster int, name string, annotations map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = e.Client(cluster, UserAdmin).CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// TouchKiloNodes sets kilo.squat.ai/last-seen to now on the named nodes of
// cluster i, or on every node carrying a kilo.squat.ai/key if none are
// named, as kg does every 30 s. Kilo drops a node whose last-seen is older
// than 60 s.
func (e *Env) TouchKiloNodes(ctx context.Context, cluster int, names ...string) error {
	if len(names) == 0 {
		list, err := e.Client(cluster, UserAdmin).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range list.Items {
			if _, ok := n.Annotations[kilov1alpha1.AnnotationKey]; ok {
				names = append(names, n.Name)
			}
		}
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	for _, name := range names {
		if err := e.AnnotateNode(ctx, cluster, name, map[string]string{kilov1alpha1.AnnotationLastSeen: now}); err != nil {
			return err
		}
	}
	return nil
}

// KeepKiloNodesFresh calls TouchKiloNodes on every running cluster each
// interval (default 20 s) until ctx ends. Errors (e.g. a stopped cluster)
// go to the environment's log and do not stop the loop. Run it in a
// goroutine.
func (e *Env) KeepKiloNodesFresh(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 20 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range e.clusters {
			if !e.ClusterRunning(i) {
				continue
			}
			if err := e.TouchKiloNodes(ctx, i); err != nil && ctx.Err() == nil {
				e.log("refreshing last-seen on cluster %d: %v", i, err)
			}
		}
	}
}

// CreateKubeconfigSecret stores a kubeconfig for user on member cluster
// memberCluster in Secret ns/name on the host cluster, under key
// "kubeconfig" (as created by `kubectl create secret generic NAME
// --from-file=kubeconfig=...`).
func (e *Env) CreateKubeconfigSecret(ctx context.Context, ns, name string, memberCluster int, user string) (*corev1.Secret, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"kubeconfig": e.KubeconfigBytes(memberCluster, user)},
	}
	return e.Client(HostCluster, UserAdmin).CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
}

// CreateKiloNodes creates n Kilo nodes on cluster i, node j built by
// build(j), many at a time through a client without the usual rate limit:
// for benchmarks that need thousands of nodes. Unlike CreateKiloNode it
// leaves the not-ready taint, which nothing of Kilo's reads.
func (e *Env) CreateKiloNodes(ctx context.Context, cluster, n int, build func(j int) KiloNode) error {
	cfg := rest.CopyConfig(e.RESTConfig(cluster, UserAdmin))
	cfg.QPS, cfg.Burst = 2000, 4000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodes := client.CoreV1().Nodes()
	create := func(j int) error {
		k := build(j)
		node, err := k.Build()
		if err != nil {
			return err
		}
		status := node.Status
		node.Status = corev1.NodeStatus{}
		created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s on cluster %d: %w", k.Name, cluster, err)
		}
		if _, err := SetNodeStatus(ctx, nodes, created, status, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting status of node %s on cluster %d: %w", k.Name, cluster, err)
		}
		return nil
	}
	const workers = 16
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				if err := create(j); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var firstErr error
	for j := 0; j < n && firstErr == nil; j++ {
		select {
		case jobs <- j:
		case firstErr = <-errs:
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil && len(errs) > 0 {
		firstErr = <-errs
	}
	return firstErr
}
