package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/hollow"
	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/clusters"
)

// fleet is the hollowmembers process and the benchmark's clients of its
// members.
type fleet struct {
	cmd      *exec.Cmd
	dir      string
	manifest *hollow.Manifest
	// kube patches Nodes and runs the floor's watches (protobuf, as kg
	// and controllers do); peerRead watches Peers as the server does;
	// floorWrite is the floor's writer, at the server's default rate.
	kube       []kubernetes.Interface
	peerRead   []rest.Interface
	floorWrite []rest.Interface
}

// startFleet runs the hollowmembers binary and waits for its manifest.
func startFleet(ctx context.Context, c config, tokens int) (*fleet, error) {
	if c.hollowBin == "" {
		return nil, fmt.Errorf("-hollowmembers is not set: run hack/bench-scale.sh, which builds it")
	}
	dir, err := os.MkdirTemp("", "hollow-members-")
	if err != nil {
		return nil, err
	}
	f := &fleet{dir: dir}
	path := filepath.Join(dir, "manifest.json")
	logFile, err := os.Create(filepath.Join(dir, "hollowmembers.log"))
	if err != nil {
		return nil, err
	}
	f.cmd = exec.Command(c.hollowBin, "-members", strconv.Itoa(c.members), "-nodes", strconv.Itoa(c.nodes),
		"-nodes-per-location", strconv.Itoa(c.perLoc), "-granularity", strings.ToLower(c.granularity),
		"-tokens", strconv.Itoa(tokens), "-checkins", c.checkIns.String(), "-manifest", path)
	f.cmd.Stdout, f.cmd.Stderr = logFile, logFile
	if err := f.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", c.hollowBin, err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if f.manifest, err = hollow.ReadManifest(path); err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			f.stop()
			return nil, fmt.Errorf("the hollow members wrote no manifest (log: %s): %w", logFile.Name(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s := runtime.NewScheme()
	if err := kilov1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	peerCodecs := serializer.NewCodecFactory(s).WithoutConversion()
	for _, mm := range f.manifest.Members {
		cfg := mm.RESTConfig()
		cfg.QPS, cfg.Burst = 2000, 4000 // the benchmark never throttles itself
		kubeCfg := rest.CopyConfig(cfg)
		kubeCfg.ContentType = runtime.ContentTypeProtobuf
		kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		f.kube = append(f.kube, kubernetes.NewForConfigOrDie(kubeCfg))
		peerCfg := rest.CopyConfig(cfg)
		peerCfg.GroupVersion = &kilov1alpha1.SchemeGroupVersion
		peerCfg.APIPath = "/apis"
		peerCfg.NegotiatedSerializer = peerCodecs
		rc, err := rest.RESTClientFor(peerCfg)
		if err != nil {
			return nil, err
		}
		f.peerRead = append(f.peerRead, rc)
		floorCfg := rest.CopyConfig(peerCfg)
		floorCfg.QPS, floorCfg.Burst = clusters.DefaultQPS, clusters.DefaultBurst
		if rc, err = rest.RESTClientFor(floorCfg); err != nil {
			return nil, err
		}
		f.floorWrite = append(f.floorWrite, rc)
	}
	return f, nil
}

// counts reads the fleet's counters.
func (f *fleet) counts(ctx context.Context) (hollow.Counts, error) {
	var c hollow.Counts
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.manifest.Control+"/counts", nil)
	if err != nil {
		return c, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, fmt.Errorf("reading the hollow members' counts: %w", err)
	}
	defer resp.Body.Close()
	return c, json.NewDecoder(resp.Body).Decode(&c)
}

// stop ends the hollowmembers process and removes its directory.
func (f *fleet) stop() {
	if f.cmd.Process != nil {
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = f.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = f.cmd.Process.Kill()
		}
	}
	_ = os.RemoveAll(f.dir)
}
