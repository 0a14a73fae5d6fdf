package apiserver

import (
	"net/http"
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
)

// groupPrefix is where the paths of the mesh API start.
var groupPrefix = "/apis/" + meshv1alpha1.GroupName + "/"

// withVersionHeader sends the server's version (version.Header) on what it
// serves under the mesh API group. It wraps the handler inside the generic
// chain, so only requests that passed authentication and authorization see
// it, and the aggregator passes it on with the rest of the response.
func withVersionHeader(serverVersion string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, groupPrefix) {
			w.Header().Set(version.Header, serverVersion)
		}
		h.ServeHTTP(w, r)
	})
}
