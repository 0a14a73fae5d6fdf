package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopHelperEnv makes the test binary, run as TestStopWithinHelper, a
// stand-in server: "exit" exits on SIGTERM, "hang" ignores it, "serving"
// ignores it while a request it serves waits on a backend that never answers.
const stopHelperEnv = "KILO_MESH_STOP_HELPER"

// TestStopWithin runs this test binary as a process that exits on SIGTERM
// and as one that does not: the first stops cleanly, the second fails the
// stop with the goroutines that held it, counted once per stack.
func TestStopWithin(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		wantErr []string
	}{
		{mode: "exit"},
		{mode: "hang", wantErr: []string{"did not exit within 2s of SIGTERM", "3 x goroutine ", "test/framework.holdAfterSIGTERM"}},
		{mode: "serving", wantErr: []string{"did not exit within 2s of SIGTERM", "net/http/httputil.(*ReverseProxy).ServeHTTP"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv(stopHelperEnv, tc.mode)
			logPath := filepath.Join(t.TempDir(), "helper.log")
			p := newProcess("helper", os.Args[0], logPath, []string{"-test.run=^TestStopWithinHelper$"})
			if err := p.start(); err != nil {
				t.Fatal(err)
			}
			defer p.stop(0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := p.waitFor(ctx, "its signal handler", 50*time.Millisecond, func(context.Context) error {
				if data, _ := os.ReadFile(logPath); !strings.Contains(string(data), "handling SIGTERM") {
					return fmt.Errorf("not yet")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			err := p.stopWithin(2 * time.Second)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("a process that exits on SIGTERM: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("a process that ignores SIGTERM stopped without an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q:\n%v", want, err)
				}
			}
			if p.running() {
				t.Error("the process still runs after the failed stop")
			}
		})
	}
}

// TestStopWithinHelper is the process TestStopWithin stops; run alone it does
// nothing.
func TestStopWithinHelper(t *testing.T) {
	mode := os.Getenv(stopHelperEnv)
	if mode == "" {
		return
	}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	fmt.Println("handling SIGTERM")
	<-terms
	if mode == "exit" {
		os.Exit(0)
	}
	if mode == "serving" {
		serveOneHeldRequest(t)
	}
	for range 3 {
		go holdAfterSIGTERM()
	}
	holdAfterSIGTERM()
}

// holdAfterSIGTERM is what a server that does not exit waits on.
func holdAfterSIGTERM() { select {} }

// serveOneHeldRequest serves, on loopback, a request that a reverse proxy
// (code of no frame of this repository) forwards to a backend that never
// answers, and returns once the proxy waits on it.
func serveOneHeldRequest(t *testing.T) {
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := backend.Accept()
		accepted <- c
	}()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(front, httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend.Addr().String()}))
	go http.Get("http://" + front.Addr().String())
	<-accepted
}
