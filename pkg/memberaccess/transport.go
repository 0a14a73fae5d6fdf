package memberaccess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Limits of every connection to a member cluster. A tenant's API server may
// be slow, hostile or a fake: no answer may hold a caller for long, nor fill
// the server's memory.
const (
	// tlsHandshakeTimeout bounds the TLS handshake.
	tlsHandshakeTimeout = 10 * time.Second
	// responseHeaderTimeout bounds the wait for the headers of every
	// answer, watches included (a kube-apiserver sends a watch's headers at
	// once). A page of 500 Nodes comes well within it.
	responseHeaderTimeout = 30 * time.Second
	// maxResponseBytes bounds the body of every answer but a watch: a page
	// of 500 real Nodes is a few MB.
	maxResponseBytes = 64 << 20
	// maxWatchEventBytes bounds one event of a watch in JSON, as client-go
	// bounds one in protobuf: a JSON event is read whole before it is
	// decoded, so an endless one would fill the memory.
	maxWatchEventBytes = 16 << 20
)

// ErrRefusedAddress marks a connection the dial policy refused; the
// *Error beside it says why.
var ErrRefusedAddress = errors.New("refused by the member server policy")

// policyDialer dials only addresses the policy allows. The check runs in
// the dialer's Control hook, on the address about to be connected, after
// name resolution: what is checked is what is dialled, so a name that
// resolves to an allowed address first and to a forbidden one later (DNS
// rebinding) reaches nothing forbidden.
func policyDialer(allowed []netip.Prefix) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   dialTimeout,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			return checkDialAddress(address, allowed)
		},
	}
	return d.DialContext
}

// checkDialAddress checks a resolved host:port before the connection.
func checkDialAddress(address string, allowed []netip.Prefix) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address", ErrRefusedAddress, address)
	}
	if err := CheckServerAddress(ap.Addr(), allowed); err != nil {
		return fmt.Errorf("%w: %w", ErrRefusedAddress, err)
	}
	return nil
}

// Transport is the transport to a tenant's member cluster: TLS and
// credentials from cfg (a ParseKubeconfig result), the policy dialer, no
// proxy (the policy must judge the API server, not a proxy in front of
// it), and bounded waits and answers.
func Transport(cfg *rest.Config, allowed []netip.Prefix) (http.RoundTripper, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS configuration: %w", err)
	}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           policyDialer(allowed),
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   25,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    cfg.DisableCompression,
	}
	return rest.HTTPWrappersForConfig(cfg, &limitedBodies{next: t})
}

// NoRedirects makes an http.Client return a redirect as the answer: a
// member API server has no reason to redirect, and following it would
// connect wherever the redirect points, with the tenant's credentials.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Redirected turns a redirect answer into an error of this package: the
// redirect itself is the problem, whatever its body says.
func Redirected(code int) *Error {
	return newError(ErrRedirect, "", fmt.Sprintf("the API server answered with a redirect (HTTP %d); redirects are never followed", code))
}

// limitedBodies caps the body of every answer, and each event of a watch.
type limitedBodies struct {
	next http.RoundTripper
}

// WrappedRoundTripper lets utilnet.CloseIdleConnectionsFor reach the
// transport when the cluster is stopped.
func (l *limitedBodies) WrappedRoundTripper() http.RoundTripper { return l.next }

func (l *limitedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if req.URL.Query().Get("watch") == "true" {
		// client-go bounds a protobuf event itself, and following the
		// nesting of binary data as JSON would end a long stream of small
		// events. Any other stream is read as JSON is.
		if !isProtobuf(resp.Header.Get("Content-Type")) {
			resp.Body = &cappedEvents{ReadCloser: resp.Body, max: maxWatchEventBytes}
		}
	} else {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxResponseBytes}
	}
	return resp, nil
}

// isProtobuf tells whether client-go decodes an answer of that Content-Type
// as protobuf: the media type as client-go parses it, not a substring, which
// a member could hide in a parameter of a JSON answer. A Content-Type that
// does not parse is decoded as JSON.
func isProtobuf(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == runtime.ContentTypeProtobuf
}

// cappedBody fails a read past its limit rather than truncate silently: a
// truncated list would decode as an error anyway, this one says why.
type cappedBody struct {
	io.ReadCloser
	left int64
}

var errBodyTooLarge = newError(ErrAnswerTooLarge, "", fmt.Sprintf("the API server's answer is larger than the %d MiB this server reads", maxResponseBytes>>20))

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// cappedEvents fails a JSON watch stream whose current event is longer
// than max. Events are one top-level value each: it follows the nesting of
// the stream (outside strings) and counts the bytes since the last value
// ended.
type cappedEvents struct {
	io.ReadCloser
	max      int
	n        int // bytes of the current event so far
	depth    int
	inString bool
	escaped  bool
}

var errEventTooLarge = newError(ErrAnswerTooLarge, "", fmt.Sprintf("an event of the API server's watch is larger than the %d MiB this server reads", maxWatchEventBytes>>20))

func (c *cappedEvents) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	for _, b := range p[:n] {
		c.n++
		switch {
		case c.inString:
			switch {
			case c.escaped:
				c.escaped = false
			case b == '\\':
				c.escaped = true
			case b == '"':
				c.inString = false
			}
		case b == '"':
			c.inString = true
		case b == '{' || b == '[':
			c.depth++
		case b == '}' || b == ']':
			if c.depth--; c.depth <= 0 {
				c.depth, c.n = 0, 0
			}
		}
	}
	if c.n > c.max {
		return 0, errEventTooLarge
	}
	return n, err
}
