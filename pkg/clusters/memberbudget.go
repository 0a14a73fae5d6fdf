package clusters

import (
	"fmt"
	"sync"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// budget is what the caches of one cluster may weigh, Nodes and Peers
// together, and the cluster's part in the budget of all tenants' member
// clusters (shared; nil for none).
type budget struct {
	max    int64
	shared *sharedBudget

	mu   sync.Mutex
	used map[string]int64 // by resource
}

func newBudget(maxBytes int64) *budget {
	return &budget{max: maxBytes, used: map[string]int64{}}
}

// set records what resource weighs now, whatever the budget.
func (b *budget) set(resource string, w int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used[resource] = w
	if b.shared != nil {
		b.shared.set(b, b.othersLocked(resource)+w)
	}
}

// othersLocked is what the resources besides resource weigh now.
func (b *budget) othersLocked(resource string) int64 {
	var n int64
	for r, w := range b.used {
		if r != resource {
			n += w
		}
	}
	return n
}

// charge sets the weight of resource to w unless that breaks a budget,
// and then says which.
func (b *budget) charge(resource string, w int64) *memberaccess.Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := w + b.othersLocked(resource)
	if all > b.max {
		return newError(memberaccess.ErrCacheBudgetExceeded, "", fmt.Sprintf("the cluster's Nodes and Peers weigh more than the %d MiB this server keeps of one member cluster "+
			"(--max-member-cache-mib, seen %d MiB when reading its %s); none of them is used", b.max>>20, all>>20, resource))
	}
	if b.shared != nil {
		if err := b.shared.charge(b, all); err != nil {
			return err
		}
	}
	b.used[resource] = w
	return nil
}

// sharedBudget is what the caches of all tenants' member clusters may
// weigh together, shared between the namespaces of the meshes using them:
// a namespace's clusters together get at most perNamespace, so that one
// tenant naming many heavy members exhausts its own share, not the
// server's memory. A cluster is charged in full to each namespace whose
// meshes use it, and is kept while one of them has room for it, so that a
// tenant naming another's cluster cannot take it from the other.
//
// Beyond the total, a namespace still gets its fair share (the total
// divided among the namespaces holding member clusters), so that tenants
// that came first cannot lock a newcomer out; what is kept then stays under
// twice the total.
type sharedBudget struct {
	total        int64 // 0: no limit
	perNamespace int64 // 0: no limit

	mu         sync.Mutex
	sum        int64
	clusters   map[*budget]*charge
	namespaces map[string]*namespaceCharge
}

// charge is what one cluster weighs, and the namespaces it is charged to
// (by the number of their meshes' bindings).
type charge struct {
	weight     int64
	namespaces map[string]int
}

// namespaceCharge is what the clusters of one namespace weigh together.
type namespaceCharge struct {
	clusters int
	weight   int64
}

func newSharedBudget(total, perNamespace int64) *sharedBudget {
	return &sharedBudget{total: total, perNamespace: perNamespace,
		clusters: map[*budget]*charge{}, namespaces: map[string]*namespaceCharge{}}
}

// use charges b to namespace, once for each binding of its meshes.
func (s *sharedBudget) use(b *budget, namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[b]
	if c == nil {
		c = &charge{namespaces: map[string]int{}}
		s.clusters[b] = c
	}
	if c.namespaces[namespace]++; c.namespaces[namespace] > 1 {
		return
	}
	n := s.namespaces[namespace]
	if n == nil {
		n = &namespaceCharge{}
		s.namespaces[namespace] = n
	}
	n.clusters++
	n.weight += c.weight
}

// release undoes one use; a cluster no namespace uses is forgotten.
func (s *sharedBudget) release(b *budget, namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[b]
	if c == nil || c.namespaces[namespace] == 0 {
		return
	}
	if c.namespaces[namespace]--; c.namespaces[namespace] > 0 {
		return
	}
	delete(c.namespaces, namespace)
	if n := s.namespaces[namespace]; n != nil {
		n.weight -= c.weight
		if n.clusters--; n.clusters == 0 {
			delete(s.namespaces, namespace)
		}
	}
	if len(c.namespaces) == 0 {
		s.sum -= c.weight
		delete(s.clusters, b)
	}
}

// set records what b weighs now.
func (s *sharedBudget) set(b *budget, w int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clusters[b]; c != nil {
		s.setLocked(c, w)
	}
}

func (s *sharedBudget) setLocked(c *charge, w int64) {
	for ns := range c.namespaces {
		s.namespaces[ns].weight += w - c.weight
	}
	s.sum += w - c.weight
	c.weight = w
}

// charge records that b weighs w if it may: while one namespace using it
// has room for it.
func (s *sharedBudget) charge(b *budget, w int64) *memberaccess.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[b]
	if c == nil {
		return nil
	}
	sum := s.sum + w - c.weight
	fair := s.total / int64(len(s.namespaces))
	var most int64
	for ns := range c.namespaces {
		use := s.namespaces[ns].weight + w - c.weight
		share := s.perNamespace == 0 || use <= s.perNamespace
		total := s.total == 0 || sum <= s.total || (use <= fair && sum <= 2*s.total)
		if share && total {
			s.setLocked(c, w)
			return nil
		}
		most = max(most, use)
	}
	// The message names no namespace: the cluster may be another tenant's too.
	if s.perNamespace != 0 && most > s.perNamespace {
		return newError(memberaccess.ErrNamespaceBudgetExceeded, "", fmt.Sprintf("the member clusters of the namespace would weigh %d MiB together with this one (%d MiB), "+
			"more than the %d MiB this server keeps of one namespace's members (--max-namespace-member-cache-mib); this cluster is not used",
			most>>20, w>>20, s.perNamespace>>20))
	}
	return newError(memberaccess.ErrNamespaceBudgetExceeded, "", fmt.Sprintf("the server's memory for member clusters is taken (--max-member-cache-total-mib=%d), "+
		"and the member clusters of the namespace would weigh %d MiB with this one (%d MiB), more than the namespace's fair share of %d MiB; this cluster is not used",
		s.total>>20, most>>20, w>>20, fair>>20))
}
