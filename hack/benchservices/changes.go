package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner/services"
)

// sightings records when each endpoint address was first seen in an
// importing cluster's EndpointSlices written by the mesh, from a watch.
type sightings struct {
	mu    sync.Mutex
	first map[int]map[string]time.Time // cluster -> address -> first seen
	count map[int]map[string]int       // cluster -> slice -> endpoints
}

func (s *sightings) seen(cluster int, es *discoveryv1.EndpointSlice) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ep := range es.Endpoints {
		for _, a := range ep.Addresses {
			if _, ok := s.first[cluster][a]; !ok {
				s.first[cluster][a] = now
			}
		}
	}
	s.count[cluster][es.Namespace+"/"+es.Name] = len(es.Endpoints)
}

func (s *sightings) endpoints(cluster int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.count[cluster] {
		n += c
	}
	return n
}

func (s *sightings) at(cluster int, addr string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.first[cluster][addr]
	return t, ok
}

func importers() []int {
	return slices.DeleteFunc(members(), func(i int) bool { return i == exporter })
}

// watch follows the mesh's EndpointSlices on the importing clusters.
func (b *bench) watch(ctx context.Context) (*sightings, error) {
	s := &sightings{first: map[int]map[string]time.Time{}, count: map[int]map[string]int{}}
	for _, i := range importers() {
		s.first[i], s.count[i] = map[string]time.Time{}, map[string]int{}
		f := informers.NewSharedInformerFactoryWithOptions(b.kube[i], 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = discoveryv1.LabelManagedBy + "=" + services.ManagedByValue
		}))
		inf := f.Discovery().V1().EndpointSlices().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.seen(i, obj.(*discoveryv1.EndpointSlice)) },
			UpdateFunc: func(_, obj any) { s.seen(i, obj.(*discoveryv1.EndpointSlice)) },
		}); err != nil {
			return nil, err
		}
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return nil, fmt.Errorf("the EndpointSlice watch of cluster %d did not sync", i)
		}
	}
	return s, nil
}

// enableServices turns services on and returns how long until both
// importing clusters hold every endpoint.
func (b *bench) enableServices(ctx context.Context) (time.Duration, error) {
	var err error
	if b.seen, err = b.watch(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := b.setServices(ctx, "Enabled"); err != nil {
		return 0, err
	}
	want := b.services * b.endpoints
	for {
		done := true
		for _, i := range importers() {
			done = done && b.seen.endpoints(i) >= want
		}
		if done {
			return time.Since(start), nil
		}
		if time.Since(start) > 20*time.Minute {
			return 0, fmt.Errorf("the imports were not complete within 20 minutes: %d and %d of %d endpoints",
				b.seen.endpoints(importers()[0]), b.seen.endpoints(importers()[1]), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// endpointChanges moves one endpoint of one exported Service at a time,
// each to a new address, and times each until both importing clusters'
// EndpointSlices hold it.
func (b *bench) endpointChanges(ctx context.Context) (p50, p99, worst time.Duration, over int, err error) {
	slicesAPI := b.kube[exporter].DiscoveryV1()
	var took []time.Duration
	for j := range b.changes {
		i := (j * 7919) % b.services // spread over the Services
		ns, name := namespaceOf(b.config, i), serviceName(i)+"-src"
		es, err := slicesAPI.EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("reading %s/%s: %w", ns, name, err)
		}
		addr := fmt.Sprintf("10.1%d.%d.%d", exporter, 200+j/250, j%250+1)
		es.Endpoints[j%len(es.Endpoints)].Addresses = []string{addr}
		start := time.Now()
		if _, err := slicesAPI.EndpointSlices(ns).Update(ctx, es, metav1.UpdateOptions{}); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("changing %s/%s: %w", ns, name, err)
		}
		var last time.Time
		for _, c := range importers() {
			for {
				t, ok := b.seen.at(c, addr)
				if ok {
					last = later(last, t)
					break
				}
				if time.Since(start) > time.Minute {
					return 0, 0, 0, 0, fmt.Errorf("change %d (%s in %s/%s) did not reach cluster %d within a minute", j, addr, ns, name, c)
				}
				time.Sleep(time.Millisecond)
			}
		}
		took = append(took, last.Sub(start))
		if d := last.Sub(start); d > time.Second {
			log.Printf("change %d (%s/%s) took %s", j, ns, name, d.Round(time.Millisecond))
		}
		if (j+1)%50 == 0 {
			log.Printf("%d changes timed", j+1)
		}
		time.Sleep(b.spacing)
	}
	slices.Sort(took)
	over = len(took) - slices.IndexFunc(took, func(d time.Duration) bool { return d >= 250*time.Millisecond })
	if over > len(took) {
		over = 0 // none
	}
	return took[len(took)/2], took[(len(took)*99+99)/100-1], took[len(took)-1], over, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
