package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
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
	cpuBefore, sentBefore := benchenv.CPUByCommand(selfCommand), b.checkInsSent.Load()
	time.Sleep(b.steady)
	cpuAfter, sentAfter := benchenv.CPUByCommand(selfCommand), b.checkInsSent.Load()
	after, err := count()
	if err != nil {
		return writeRates{}, err
	}
	per := b.steady.Minutes()
	return writeRates{
		peers:  (after.peers - before.peers) / per,
		meshes: (after.meshes - before.meshes) / per,
		leases: (after.leases - before.leases) / per,
		cpu:    steadyCPU{used: benchenv.CPUUsed(cpuBefore, cpuAfter), checkIns: sentAfter - sentBefore},
	}, nil
}

// selfCommand names the benchmark's own process in the CPU figures.
const selfCommand = "benchmark (check-ins, loop, watches)"

// steadyCPU is what the machine's cores did in steady state.
type steadyCPU struct {
	used     map[string]time.Duration
	checkIns int64 // check-in patches answered meanwhile
}

// print adds the steady state's CPU to the figures' table: the share of one
// core each command took, and the members' cost of one check-in.
func (s steadyCPU) print(over time.Duration) {
	fmt.Printf("| CPU in steady state, share of one core (of %d) | %s | |\n", runtime.NumCPU(), benchenv.CPUShares(s.used, over))
	if s.checkIns > 0 {
		members := s.used["kube-apiserver"] + s.used["etcd"]
		fmt.Printf("| kube-apiservers' and etcd's CPU per check-in patch, their idle cost included (%d patches) | %s | |\n", s.checkIns, (members / time.Duration(s.checkIns)).Round(10*time.Microsecond))
	}
}
