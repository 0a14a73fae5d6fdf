package memberaccess

import (
	"context"
	"io"
	"net/http"
	"time"
)

// WithDeadline bounds every request through next, its answer's body
// included, by timeout, as http.Client.Timeout would. The client's own
// timeout starts a goroutine per request on any transport net/http does
// not know (net/http's setRequestCancel), one more for the scheduler at
// every Peer write; a context deadline needs none.
func WithDeadline(next http.RoundTripper, timeout time.Duration) http.RoundTripper {
	return &deadlineTransport{next: next, timeout: timeout}
}

type deadlineTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (d *deadlineTransport) WrappedRoundTripper() http.RoundTripper { return d.next }

func (d *deadlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), d.timeout)
	resp, err := d.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases the deadline's timer once the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
