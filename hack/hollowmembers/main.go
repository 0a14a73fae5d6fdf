// Command hollowmembers serves hollow member clusters for the benchmarks at
// scale: N in-memory API servers on loopback, each on its own port with its
// own CA, token and kube-system UID, holding Kilo-annotated Nodes and
// serving what kilo-mesh-apiserver uses on a member (see
// hack/hollow/README.md), with Kilo's check-in stream written
// inside. It writes a manifest (servers, CAs, tokens) for the benchmark and
// runs until interrupted.
//
//	go run ./hack/hollowmembers -members 100 -nodes 100 -manifest /tmp/hollow.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // on -pprof only, a loopback address
	"os/signal"
	"syscall"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/hollow"
)

func main() {
	var (
		l        hollow.Layout
		tokens   int
		checkIns time.Duration
		manifest string
		pprof    string
	)
	flag.IntVar(&l.Members, "members", 100, "member clusters")
	flag.IntVar(&l.Nodes, "nodes", 100, "Kilo nodes per member")
	flag.IntVar(&l.NodesPerLocation, "nodes-per-location", 100, "nodes per Kilo location (the first of each leads it)")
	flag.StringVar(&l.Granularity, "granularity", "location", "the nodes' kilo.squat.ai/granularity")
	flag.IntVar(&tokens, "tokens", 0, "further tokens per member, one per tenant reaching it with credentials of its own")
	flag.DurationVar(&checkIns, "checkins", 30*time.Second, "Kilo's check-in stream: every node's last-seen once per this period (0: none)")
	flag.StringVar(&manifest, "manifest", "hollow-members.json", "where to write the members' servers, CAs and tokens")
	flag.StringVar(&pprof, "pprof", "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6061")
	flag.Parse()
	log.SetFlags(log.Ltime)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	fleet, err := hollow.StartFleet(l, tokens)
	if err != nil {
		log.Fatal(err)
	}
	defer fleet.Close()
	if pprof != "" {
		go func() { log.Print(http.ListenAndServe(pprof, nil)) }()
	}
	// The fleet's counters, for the benchmark, on a loopback port of its own.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	control := http.NewServeMux()
	control.HandleFunc("/counts", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fleet.Counts())
	})
	go func() { _ = http.Serve(ln, control) }()
	if err := fleet.WriteManifest(manifest, "http://"+ln.Addr().String()); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d hollow members of %d nodes ready in %s; manifest %s", l.Members, l.Nodes, time.Since(start).Round(time.Millisecond), manifest)
	go fleet.CheckIns(ctx, checkIns)
	<-ctx.Done()
}
