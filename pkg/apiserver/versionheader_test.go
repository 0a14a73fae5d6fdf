package apiserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version"
)

func TestWithVersionHeader(t *testing.T) {
	tests := []struct {
		name, target, want string
	}{
		{"group version discovery", "/apis/mesh.kilo.squat.ai/v1alpha1", "v1.2.3"},
		{"a resource", "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/ns/clustermeshes/demo", "v1.2.3"},
		{"group discovery", "/apis/mesh.kilo.squat.ai/", "v1.2.3"},
		{"another group", "/apis/mesh.kilo.squat.ai.example.com/v1", ""},
		{"health", "/healthz", ""},
		{"all groups", "/apis", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h := withVersionHeader("v1.2.3", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
			if got := rec.Header().Get(version.Header); got != tt.want {
				t.Errorf("%s: header %q, want %q", tt.target, got, tt.want)
			}
		})
	}
}
