//go:build integration

package clusters

import (
	"runtime"
	"strings"

	"k8s.io/client-go/tools/cache"
)

// Stats is what the integration tests count of a Manager to show that
// caches are shared, and stopped with their last mesh.
type Stats struct {
	// Clusters is the number of distinct member clusters with caches (the
	// local one included).
	Clusters int
	// Informers is the number of Node and Peer informers running.
	Informers int
	// SecretWatches is the number of Secret informers running.
	SecretWatches int
}

// stats reads the clusters m holds, and counts the informers whose
// goroutines have not returned in the stacks of the whole test binary: a
// released cluster leaves m at once, and only its goroutines ending shows
// that it stopped. So call it only while m is the only Manager running.
//
// An informer goroutine is one in sharedIndexInformer.RunWithContext,
// started by cluster.runInformerLocked or secretWatch.start: renaming those
// makes the counts 0, and the tests fail rather than pass by accident.
func (m *Manager) stats() Stats {
	m.mu.RLock()
	s := Stats{Clusters: len(m.clusters)}
	m.mu.RUnlock()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	// Frames read "pkg.(*T).Method(args)"; "created by" lines have no
	// parenthesis after the name, so the goroutines an informer starts do
	// not count.
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "cache.(*sharedIndexInformer).RunWithContext(") {
			continue
		}
		switch {
		case strings.Contains(g, "clusters.(*cluster).runInformerLocked."):
			s.Informers++
		case strings.Contains(g, "clusters.(*secretWatch).start."):
			s.SecretWatches++
		}
	}
	return s
}

// informersNotStopped counts the informers of the clusters and Secrets m
// holds whose Run has not returned (or never ran); unlike stats, it holds
// while other Managers run. Once Run returned it must be 0.
func (m *Manager) informersNotStopped() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var informers []cache.SharedIndexInformer
	for _, c := range m.clusters {
		informers = append(informers, c.nodes)
		if p := c.peerInformer(); p != nil {
			informers = append(informers, p)
		}
		informers = append(informers, c.servicesInformers()...)
	}
	for _, sw := range m.secrets {
		informers = append(informers, sw.informer)
	}
	n := 0
	for _, inf := range informers {
		if !inf.IsStopped() {
			n++
		}
	}
	return n
}
