package clusters

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
)

// DefaultMaxNodes is how many Nodes one member cluster may have before its
// Nodes are no longer cached (Config.MaxNodes): five times the 5,000 nodes
// Kubernetes is tested with, about 75 MB of cache at the transforms' size.
const DefaultMaxNodes = 25000

const (
	// nodePageSize is the size of each page of a Node list. Lists are paged
	// by this server, not left to the reflector: a page larger than asked
	// for is refused, so one answer never holds more than a page.
	nodePageSize = 500
	// listTimeout bounds each page of a list; a member that stalls lists
	// fails them instead of holding the informer forever.
	listTimeout = 60 * time.Second
	// tooManyNodesRetry is how long a cluster found over the limit is not
	// listed again: counting its Nodes costs it (and this server) a full list.
	tooManyNodesRetry = 5 * time.Minute
)

// nodeLimit lists and watches the Nodes of one cluster, up to max of them.
// A cluster over the limit fails its lists with ErrTooManyNodes, and a
// watch that takes it over the limit is ended, so the informer relists and
// finds out; its Nodes are then unused (ClusterState.Synced is false).
type nodeLimit struct {
	nodes typedcorev1.NodeInterface
	max   int
	clock clock.PassiveClock

	mu       sync.Mutex
	count    int       // Nodes known: the last list, then watch events
	overSeen time.Time // when a list last found too many; zero if not
	overErr  *Error
}

func newNodeLimit(nodes typedcorev1.NodeInterface, maxNodes int, clk clock.PassiveClock) *nodeLimit {
	return &nodeLimit{nodes: nodes, max: maxNodes, clock: clk}
}

func (l *nodeLimit) tooMany(n int) *Error {
	return newError(ErrTooManyNodes, "", fmt.Sprintf("the cluster has more than %d Nodes (the server's --max-member-nodes, seen %d); its Nodes are not cached and the mesh does not use them", l.max, n))
}

// List reads every Node page by page, from the API server's storage (a
// list from its watch cache would ignore the page size).
func (l *nodeLimit) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	if !l.overSeen.IsZero() && l.clock.Since(l.overSeen) < tooManyNodesRetry {
		err := l.overErr
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()

	o.ResourceVersion, o.ResourceVersionMatch = "", ""
	o.Limit = nodePageSize
	out := &corev1.NodeList{}
	for {
		page, err := l.page(ctx, o)
		if err != nil {
			return nil, err
		}
		if len(page.Items) > nodePageSize {
			return nil, newError(ErrListWatch, "", fmt.Sprintf("the API server answered %d Nodes to a list of %d at most", len(page.Items), nodePageSize))
		}
		if out.ResourceVersion == "" {
			out.ListMeta = page.ListMeta
		}
		out.Items = append(out.Items, page.Items...)
		if len(out.Items) > l.max {
			e := l.tooMany(len(out.Items))
			l.mu.Lock()
			l.overSeen, l.overErr = l.clock.Now(), e
			l.mu.Unlock()
			return nil, e
		}
		if page.Continue == "" {
			break
		}
		o.Continue = page.Continue
	}
	out.Continue, out.RemainingItemCount = "", nil
	l.mu.Lock()
	l.count, l.overSeen, l.overErr = len(out.Items), time.Time{}, nil
	l.mu.Unlock()
	return out, nil
}

func (l *nodeLimit) page(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	return l.nodes.List(ctx, o)
}

// Watch counts the Nodes the watch adds and deletes.
func (l *nodeLimit) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.nodes.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, l.counted), nil
}

// counted passes an event on, unless it takes the cluster over the limit:
// then it becomes an error that ends the watch, and the relist that follows
// finds the cluster over the limit.
func (l *nodeLimit) counted(e watch.Event) (watch.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Type {
	case watch.Added:
		l.count++
	case watch.Deleted:
		l.count--
	}
	if e.Type == watch.Added && l.count > l.max {
		status := metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
			Message: fmt.Sprintf("more than %d Nodes; relisting to count them", l.max)}
		return watch.Event{Type: watch.Error, Object: &status}, true
	}
	return e, true
}
