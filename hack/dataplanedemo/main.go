// Command dataplanedemo builds the data-plane bed of test/dataplane (three
// real kube-apiservers, the real server, every Kilo node a network
// namespace running userspace WireGuard), joins the clusters into one mesh,
// probes every pod and service pair and prints the connectivity matrices.
// With -recoveries N it also times N key rotations and N leader changes.
// With -hold it keeps the bed up until Ctrl-C and says how to look inside.
// hack/dataplane-demo.sh runs it; it needs root.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/dataplane"
)

func main() {
	var (
		recoveries = flag.Int("recoveries", 0, "key rotations and leader changes to time")
		full       = flag.Bool("full", false, "also switch to full granularity and probe again")
		hold       = flag.Bool("hold", false, "keep the bed up until Ctrl-C")
	)
	flag.Parse()
	log.SetFlags(log.Ltime)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *recoveries, *full, *hold); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, recoveries int, full, hold bool) error {
	b, err := dataplane.Start(ctx, dataplane.Options{Logf: log.Printf})
	if err != nil {
		return err
	}
	defer func() {
		log.Printf("tearing the bed down")
		if err := b.Stop(); err != nil {
			log.Printf("stopping: %v", err)
		}
	}()
	clusters := make([]int, dataplane.Clusters)
	for i := range clusters {
		clusters[i] = i
	}
	if err := b.ApplyMesh(ctx, clusters...); err != nil {
		return err
	}
	if err := probe(ctx, b, "location granularity"); err != nil {
		return err
	}
	if recoveries > 0 {
		rotations, changes, err := b.Recoveries(ctx, recoveries, log.Printf)
		if err != nil {
			return err
		}
		fmt.Printf("\nrecovery after a key rotation, %s\nrecovery after a leader change, %s\n",
			dataplane.RecoveryStats(rotations), dataplane.RecoveryStats(changes))
	}
	if full {
		if err := b.SetFullGranularity(ctx); err != nil {
			return err
		}
		if err := probe(ctx, b, "full granularity"); err != nil {
			return err
		}
	}
	if hold {
		n := b.Node("c0-a2")
		fmt.Printf("\nThe bed stays up until Ctrl-C. For instance:\n"+
			"  ip netns exec %s ip route          # a member routes other clusters through its leader\n"+
			"  ip netns exec %s ip route          # the leader routes them into kilo0\n"+
			"  cat %s/c0-a1/status.json           # what c0-a1's agent applied\n"+
			"  KUBECONFIG=%s kubectl get peers\n",
			n.Namespace, b.Node("c0-a1").Namespace, b.LogDir(), b.Env.Kubeconfig(0, "admin"))
		<-ctx.Done()
	}
	return nil
}

// probe places the services where the plan says and prints the matrices.
func probe(ctx context.Context, b *dataplane.Bed, label string) error {
	anchors, err := b.PlaceServices(ctx)
	if err != nil {
		return err
	}
	for i := range dataplane.Clusters {
		log.Printf("service %s of %s is on its anchor %s", dataplane.ServiceAddr(i), dataplane.ClusterName(i), anchors[i].Name)
	}
	start := time.Now()
	matrices, failed := b.Connectivity(ctx, label, 60*time.Second)
	log.Printf("probed in %s", time.Since(start).Round(time.Millisecond))
	for _, m := range matrices {
		fmt.Printf("\n%s", m)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d pairs failed:\n%splan:\n%s", len(failed), dataplane.DescribeFailures(failed), b.DescribePlan(ctx))
	}
	return nil
}
