package apiserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWithStatusPeers(t *testing.T) {
	const base = "/apis/mesh.kilo.squat.ai/v1alpha1/namespaces/"
	tests := []struct {
		name, target, want string
	}{
		{"renamed, query kept", base + "ns/clustermeshes/demo/status/peers?cluster=east&format=wireguard", base + "ns/clustermeshes/demo/peers?cluster=east&format=wireguard"},
		{"status itself untouched", base + "ns/clustermeshes/demo/status", base + "ns/clustermeshes/demo/status"},
		{"peers untouched", base + "ns/clustermeshes/demo/peers", base + "ns/clustermeshes/demo/peers"},
		{"deeper paths untouched", base + "ns/clustermeshes/demo/status/peers/x", base + "ns/clustermeshes/demo/status/peers/x"},
		{"other resources untouched", base + "ns/clustermeshgrants/demo/status/peers", base + "ns/clustermeshgrants/demo/status/peers"},
		{"other groups untouched", "/apis/other.example.com/v1alpha1/namespaces/ns/clustermeshes/demo/status/peers", "/apis/other.example.com/v1alpha1/namespaces/ns/clustermeshes/demo/status/peers"},
		{"no name", base + "ns/clustermeshes//status/peers", base + "ns/clustermeshes//status/peers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			h := withStatusPeers(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.URL.RequestURI() }))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tt.target, nil))
			if got != tt.want {
				t.Errorf("served %q, want %q", got, tt.want)
			}
		})
	}
}
