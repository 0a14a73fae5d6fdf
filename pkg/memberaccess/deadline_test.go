package memberaccess

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWithDeadline: a request through WithDeadline ends at its deadline
// whether the member holds back its headers or the rest of its body, and
// one answered in time reads its whole body after the round trip returns.
// The member is an HTTP/2 server on loopback, as member API servers are.
func TestWithDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/headers-late":
			<-release
		case "/body-late":
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("part"))
			w.(http.Flusher).Flush()
			<-release
		default:
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond) // after the round trip returned
			_, _ = w.Write([]byte("whole answer"))
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	defer close(release)
	const timeout = 300 * time.Millisecond
	client := &http.Client{Transport: WithDeadline(srv.Client().Transport, timeout)}
	for _, tc := range []struct {
		path     string
		wantBody string // "": the request must end by its deadline
	}{
		{path: "/in-time", wantBody: "whole answer"},
		{path: "/headers-late"},
		{path: "/body-late"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			start := time.Now()
			body, err := get(client, srv.URL+tc.path)
			took := time.Since(start)
			switch {
			case tc.wantBody != "" && (err != nil || body != tc.wantBody):
				t.Errorf("answer %q, %v; want %q", body, err, tc.wantBody)
			case tc.wantBody == "" && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("error %v after %s, want the deadline exceeded", err, took)
			case tc.wantBody == "" && took > timeout+time.Second:
				t.Errorf("ended after %s, want about %s", took, timeout)
			}
		})
	}
}

// get reads url; a request the transport does not end ends after 5 s.
func get(client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
