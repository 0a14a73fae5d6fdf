package apiserver

import (
	"net/http"
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// statusPeersPrefix is where the namespaced paths of the mesh API start.
var statusPeersPrefix = "/apis/" + meshv1alpha1.SchemeGroupVersion.String() + "/namespaces/"

// withStatusPeers serves clustermeshes/NAME/status/peers, the name the
// design gives the peers view, as clustermeshes/NAME/peers. The generic
// server knows one level of subresource only, so the request is renamed
// before the handler chain resolves and authorizes it: the same parameters
// and formats apply, and the same delegated authorization (a
// SubjectAccessReview of get on clustermeshes/peers), byte for byte.
func withStatusPeers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if path, ok := statusPeersPath(r.URL.Path); ok {
			r = r.Clone(r.Context())
			r.URL.Path, r.URL.RawPath = path, ""
			r.RequestURI = r.URL.RequestURI()
		}
		h.ServeHTTP(w, r)
	})
}

// statusPeersPath maps .../namespaces/NS/clustermeshes/NAME/status/peers
// to .../namespaces/NS/clustermeshes/NAME/peers.
func statusPeersPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, statusPeersPrefix)
	if !ok {
		return "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 5 || parts[0] == "" || parts[1] != "clustermeshes" || parts[2] == "" || parts[3] != "status" || parts[4] != "peers" {
		return "", false
	}
	return statusPeersPrefix + strings.Join([]string{parts[0], parts[1], parts[2], "peers"}, "/"), true
}
