// Command benchscale measures the real server binary at scale on hollow
// member clusters (hack/hollowmembers, in a process of its own): meshes of
// tens to hundreds of member clusters under Kilo's check-in stream, the
// time until every Peer exists, a change that alters a Peer until it is on
// every other member, beside the floor (the simplest controller, one watch
// per member and one write per change, on the same members in the same
// run), writes at rest, the views' answer time, and the server's memory
// and CPU. hack/bench-scale.sh runs it; the figures go to
// docs/performance.md ("At scale: hollow members").
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/internal/benchenv"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

type config struct {
	members, nodes, perLoc, meshes, perMesh int
	granularity                             string
	tenantTokens, chain                     bool
	checkIns, steady                        time.Duration
	changes, burst, views                   int
	churn                                   float64
	floor                                   bool
	profiles                                string
	hollowBin                               string
	serverArgs                              []string
}

func main() {
	var c config
	flag.IntVar(&c.members, "members", 100, "hollow member clusters")
	flag.IntVar(&c.nodes, "nodes", 100, "Kilo nodes per member")
	flag.StringVar(&c.granularity, "granularity", "Location", "Full (one Peer per node) or Location")
	flag.IntVar(&c.perLoc, "nodes-per-location", 100, "nodes per Kilo location (the first leads it)")
	flag.IntVar(&c.meshes, "meshes", 1, "meshes, each in a namespace (a tenant) of its own")
	flag.IntVar(&c.perMesh, "clusters-per-mesh", 0, "member clusters per mesh, taken in turn from the members (0: every member, one mesh)")
	flag.BoolVar(&c.tenantTokens, "tenant-credentials", false, "each mesh entry reaches its member with credentials of its own (a connection per entry)")
	flag.BoolVar(&c.chain, "chain", false, "consecutive meshes share one member (members: meshes x (clusters-per-mesh - 1)); else each mesh takes the next members")
	flag.DurationVar(&c.checkIns, "checkins", 30*time.Second, "Kilo's check-in stream: every node's last-seen once per this period, in the members (0: none)")
	flag.IntVar(&c.changes, "changes", 200, "single changes that alter a Peer, timed one after the other")
	flag.IntVar(&c.burst, "burst", 0, "changes of distinct Peers spread over one second, each timed until it is everywhere (0: none)")
	flag.Float64Var(&c.churn, "churn", 0, "changes per second that alter Peers of the meshes not measured, during the measured changes")
	flag.BoolVar(&c.floor, "floor", true, "time the same changes through the floor: one watch per member, one write per change and target")
	flag.IntVar(&c.views, "views", 20, "requests of each view (peers, plan) of the first mesh, timed")
	flag.DurationVar(&c.steady, "steady", time.Minute, "how long writes and CPU are counted at rest")
	flag.StringVar(&c.profiles, "profiles", "", "a directory for the server's profiles: CPU during the changes, heap and goroutines at the end")
	flag.StringVar(&c.hollowBin, "hollowmembers", "", "the hollowmembers binary (hack/bench-scale.sh builds it)")
	flag.Func("server-arg", "a flag for kilo-mesh-apiserver (repeatable)", func(s string) error {
		c.serverArgs = append(c.serverArgs, s)
		return nil
	})
	flag.Parse()
	benchenv.Run(3*time.Hour, func(ctx context.Context) error { return run(ctx, c) })
}

func run(ctx context.Context, c config) error {
	if c.granularity != "Full" && c.granularity != "Location" {
		return fmt.Errorf("-granularity must be Full or Location")
	}
	if c.perMesh == 0 {
		c.perMesh, c.meshes = c.members, 1
	}
	if c.perMesh < 2 || c.perMesh > c.members {
		return fmt.Errorf("-clusters-per-mesh must be between 2 and -members")
	}
	b := &bench{config: c}
	b.layoutMeshes()
	fl, err := startFleet(ctx, c, b.entriesPerMember())
	if err != nil {
		return err
	}
	defer fl.stop()
	b.fleet = fl
	env, server, err := benchenv.Start(ctx, framework.Options{Clusters: 1}, framework.MeshServerOptions{ExtraArgs: c.serverArgs})
	if err != nil {
		return err
	}
	defer env.Stop()
	b.env, b.server = env, server
	b.peers = newTracker()
	if err := b.peers.start(ctx, fl); err != nil {
		return err
	}
	log.Printf("%d hollow members of %d nodes, %d meshes of %d clusters", c.members, c.nodes, c.meshes, c.perMesh)

	var f figures
	if f.before, err = b.serverMemory(ctx); err != nil {
		return err
	}
	cpu0 := benchenv.CPUByCommand("benchmark")
	if f.created, f.ready, err = b.createMeshes(ctx); err != nil {
		return err
	}
	f.coldCPU = benchenv.CPUUsed(cpu0, benchenv.CPUByCommand("benchmark"))
	time.Sleep(5 * time.Second) // the cold start's last echoes
	if f.cold, err = b.serverMemory(ctx); err != nil {
		return err
	}
	if c.profiles != "" {
		if err := benchenv.HeapProfile(ctx, b.direct(), c.profiles+"/heap-cold.pprof"); err != nil {
			log.Printf("heap profile: %v", err)
		}
	}
	stopChurn := b.startChurn(ctx)
	waitProfile := func() {}
	if c.profiles != "" {
		waitProfile = benchenv.CPUProfile(ctx, b.direct(), 30*time.Second, c.profiles+"/cpu-changes.pprof")
	}
	if f.scrapes[0], err = framework.Scrape(ctx, b.direct()); err != nil {
		return err
	}
	if f.single, err = b.timeChanges(ctx, b.changeList(c.changes), b.change); err != nil {
		return err
	}
	if f.scrapes[1], err = framework.Scrape(ctx, b.direct()); err != nil {
		return err
	}
	waitProfile()
	if c.floor {
		if f.floor, err = b.floorChanges(ctx); err != nil {
			return err
		}
	}
	stopChurn()
	if c.burst > 0 {
		time.Sleep(2 * time.Second)
		if f.scrapes[2], err = framework.Scrape(ctx, b.direct()); err != nil {
			return err
		}
		if f.burst, err = b.burstChanges(ctx); err != nil {
			return err
		}
		if f.scrapes[3], err = framework.Scrape(ctx, b.direct()); err != nil {
			return err
		}
	}
	if c.views > 0 {
		if f.views, err = b.timeViews(ctx); err != nil {
			return err
		}
	}
	if f.rest, err = b.atRest(ctx); err != nil {
		return err
	}
	if f.end, err = b.serverMemory(ctx); err != nil {
		return err
	}
	if c.profiles != "" {
		b.endProfiles(ctx)
	}
	if err := b.logConditions(ctx); err != nil {
		return err
	}
	f.print(b)
	if err := benchenv.Budget(fmt.Sprintf("%d changes", c.changes), f.scrapes[0], f.scrapes[1]); err != nil {
		return err
	}
	if f.scrapes[3] != nil {
		return benchenv.Budget(fmt.Sprintf("burst of %d", c.burst), f.scrapes[2], f.scrapes[3])
	}
	return nil
}

// figures are a run's results.
type figures struct {
	before, cold, end memory
	created, ready    time.Duration
	single, floor     []time.Duration
	burst             []time.Duration
	views             map[string][]time.Duration
	rest              atRestFigures
	// coldCPU is what each process took until every mesh was Ready.
	coldCPU map[string]time.Duration
	// scrapes are the server's metrics before and after the single
	// changes, and the burst.
	scrapes [4][]byte
}

func (f figures) print(b *bench) {
	c := b.config
	fmt.Printf("\n%d hollow members x %d nodes, %s granularity, %d mesh(es) of %d clusters, check-ins every %s; server flags %q; %d CPUs, load average at the end %s\n",
		c.members, c.nodes, c.granularity, c.meshes, c.perMesh, c.checkIns, c.serverArgs, runtime.NumCPU(), benchenv.LoadAverage())
	fmt.Printf("| figure | value |\n|---|---|\n")
	fmt.Printf("| Peers in all, per member (at most) | %d, %d |\n", b.totalPeers(), b.maxPeersPerMember())
	fmt.Printf("| meshes created -> every Peer on every member | %s |\n", f.created.Round(10*time.Millisecond))
	fmt.Printf("| meshes created -> every mesh Ready | %s |\n", f.ready.Round(10*time.Millisecond))
	fmt.Printf("| CPU until then, share of one core | %s |\n", benchenv.CPUShares(f.coldCPU, f.ready))
	if server := f.rest.server; server != "" {
		fmt.Printf("| server CPU per Peer written in the cold start | %s |\n", (f.coldCPU[server] / time.Duration(b.totalPeers())).Round(time.Microsecond))
	}
	row := func(name string, took []time.Duration) {
		if len(took) == 0 {
			return
		}
		p50, p99, worst := percentiles(took)
		fmt.Printf("| %s, p50 / p99 / slowest (%d) | %s / %s / %s |\n", name, len(took), p50.Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond))
	}
	row(fmt.Sprintf("a change that alters a Peer -> on its %d other members (server)", c.perMesh-1), f.single)
	row("the same through the floor (one watch per member, one write per change and target)", f.floor)
	if len(f.single) > 0 && len(f.floor) > 0 {
		s50, s99, _ := percentiles(f.single)
		f50, f99, _ := percentiles(f.floor)
		fmt.Printf("| server / floor, p50 and p99 | %.2fx, %.2fx |\n", float64(s50)/float64(f50), float64(s99)/float64(f99))
	}
	row(fmt.Sprintf("burst of %d changes in 1 s -> each everywhere", c.burst), f.burst)
	for _, v := range viewNames {
		row("view "+v+" of the first mesh through the aggregator", f.views[v])
	}
	f.rest.print(c)
	fmt.Printf("| server memory: before the meshes, every Peer written, at the end (RSS; Go heap in use) | %s; %s; %s |\n", f.before, f.cold, f.end)
	entries := c.meshes * c.perMesh
	fmt.Printf("| server memory per mesh entry (member connection), after the cold start minus before: RSS; heap | %.2f MiB; %.2f MiB |\n",
		float64(f.cold.rss-f.before.rss)/float64(entries)/(1<<20), float64(f.cold.heap-f.before.heap)/float64(entries)/(1<<20))
}
