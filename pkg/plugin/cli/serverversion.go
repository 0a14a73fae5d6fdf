package cli

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
)

// ServerVersion asks the mesh server for its version: the host's /version
// is the kube-apiserver's, so it is read from the version.Header of the
// group version's discovery document, which the aggregator passes on and
// every authenticated user may read (system:discovery).
func ServerVersion(ctx context.Context, cfg *rest.Config) (string, error) {
	cfg = rest.CopyConfig(cfg)
	var mu sync.Mutex
	var got string
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if resp != nil {
				mu.Lock()
				got = resp.Header.Get(version.Header)
				mu.Unlock()
			}
			return resp, err
		})
	})
	api, err := NewMeshAPI(cfg)
	if err != nil {
		return "", err
	}
	gv := meshv1alpha1.SchemeGroupVersion
	if err := api.client.Get().AbsPath("/apis", gv.Group, gv.Version).Do(ctx).Error(); err != nil {
		return "", fmt.Errorf("reading the discovery document of %s on the host cluster: %w", gv, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got == "" {
		return "", fmt.Errorf("the server of %s sent no %s header: it is older than this plugin's version command", gv, version.Header)
	}
	return got, nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
