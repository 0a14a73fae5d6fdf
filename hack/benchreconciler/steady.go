package main

import (
	"context"
	"time"

	"k8s.io/client-go/rest"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

type writeRates struct {
	peers, meshes, leases float64
	cpu                   steadyCPU
}

// steadyWrites counts the write requests the clusters and the server serve
// while nothing changes.
func (b *bench) steadyWrites(ctx context.Context) (writeRates, error) {
	time.Sleep(5 * time.Second) // the last change's echoes
	writes := func(cfg *rest.Config, group, resource string) (float64, error) {
		m, err := framework.Scrape(ctx, cfg)
		if err != nil {
			return 0, err
		}
		return framework.RequestWrites(m, group, resource)
	}
	count := func() (r writeRates, err error) {
		for i := range b.clusters {
			p, err := writes(b.env.RESTConfig(i, framework.UserAdmin), kilov1alpha1.GroupName, "peers")
			if err != nil {
				return r, err
			}
			r.peers += p
		}
		if r.leases, err = writes(b.env.RESTConfig(framework.HostCluster, framework.UserAdmin), "coordination.k8s.io", "leases"); err != nil {
			return r, err
		}
		r.meshes, err = writes(b.server.DirectRESTConfig(framework.UserAdmin), meshv1alpha1.GroupName, "clustermeshes")
		return r, err
	}
	before, err := count()
	if err != nil {
		return writeRates{}, err
	}
	cpuBefore, sentBefore := cpuByCommand(), b.checkInsSent.Load()
	time.Sleep(b.steady)
	cpuAfter, sentAfter := cpuByCommand(), b.checkInsSent.Load()
	after, err := count()
	if err != nil {
		return writeRates{}, err
	}
	per := b.steady.Minutes()
	return writeRates{
		peers:  (after.peers - before.peers) / per,
		meshes: (after.meshes - before.meshes) / per,
		leases: (after.leases - before.leases) / per,
		cpu:    steadyCPU{used: cpuUsed(cpuBefore, cpuAfter), checkIns: sentAfter - sentBefore},
	}, nil
}
