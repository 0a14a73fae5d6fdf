package memberaccess

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

func TestCappedEvents(t *testing.T) {
	event := func(size int) string {
		return `{"type":"ADDED","object":{"kind":"Peer","metadata":{"name":"p","annotations":{"a":"` + strings.Repeat(`}{\"`, size/5) + `"}}}}` + "\n"
	}
	read := func(stream string, max int) error {
		c := &cappedEvents{ReadCloser: io.NopCloser(strings.NewReader(stream)), max: max}
		_, err := io.ReadAll(c)
		return err
	}
	small := strings.Repeat(event(1000), 5000) // 5 MB of events of 1 KB
	if err := read(small, 4096); err != nil {
		t.Errorf("a long stream of small events: %v", err)
	}
	if err := read(event(1000)+event(100_000)+event(10), 4096); !errors.Is(err, ErrAnswerTooLarge) {
		t.Errorf("one event of 100 kB: %v", err)
	}
}

// TestWatchEventCap: a watch is read as JSON, its events capped, unless
// client-go decodes it as protobuf (which it bounds itself, and whose bytes
// do not nest as JSON's do); a JSON answer cannot pass for protobuf by
// naming it in a parameter.
func TestWatchEventCap(t *testing.T) {
	// More than one event may hold, every byte opening a value.
	stream := strings.Repeat("{", maxWatchEventBytes+1)
	for _, tc := range []struct {
		contentType string
		capped      bool
	}{
		{"application/vnd.kubernetes.protobuf;stream=watch", false},
		{"application/json", true},
		{"application/json;stream=watch", true},
		{"application/json; x=application/vnd.kubernetes.protobuf", true},
		{"application/vnd.kubernetes.protobuf;;", true}, // does not parse: client-go reads JSON
		{"", true},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			next := roundTripperFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {tc.contentType}},
					Body: io.NopCloser(strings.NewReader(stream))}, nil
			})
			req, err := http.NewRequest(http.MethodGet, "https://member.example/api/v1/nodes?watch=true", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&limitedBodies{next: next}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			if got := errors.Is(err, ErrAnswerTooLarge); got != tc.capped {
				t.Errorf("capped %v, want %v (%v)", got, tc.capped, err)
			}
		})
	}
}

// TestLimitedBodiesCloseIdle: stopping a cluster closes its idle
// connections through the body limits (utilnet.CloseIdleConnectionsFor
// stops at a wrapper it cannot see through).
func TestLimitedBodiesCloseIdle(t *testing.T) {
	next := &idleCloser{}
	utilnet.CloseIdleConnectionsFor(&limitedBodies{next: next})
	if next.closed != 1 {
		t.Errorf("the transport's idle connections closed %d times", next.closed)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type idleCloser struct {
	roundTripperFunc
	closed int
}

func (c *idleCloser) CloseIdleConnections() { c.closed++ }
