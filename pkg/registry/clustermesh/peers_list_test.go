package clustermesh

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"
)

// The ?cluster= list follows the Accept header: JSON for kubectl get --raw
// and by default, YAML when asked; both the same v1 List.
func TestPeerListAccept(t *testing.T) {
	l := &peerList{meshNamespace: "tenant", meshName: "m", cluster: "eu", plan: testPeersPlan()}
	for _, tc := range []struct {
		accept, contentType string
	}{
		{"application/json, */*", "application/json"}, // kubectl get --raw
		{"", "application/json"},
		{"*/*", "application/json"},
		{"application/yaml", "application/yaml"},
		{"application/json;q=0.5, application/yaml", "application/yaml"},
		{"application/vnd.kubernetes.protobuf, application/yaml", "application/yaml"},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			r, _, contentType, err := l.InputStream(context.Background(), "v1alpha1", tc.accept)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if contentType != tc.contentType {
				t.Errorf("content type %q, want %q", contentType, tc.contentType)
			}
			if isJSON := json.Valid(body); isJSON != (tc.contentType == "application/json") {
				t.Errorf("body is JSON: %v, want %s:\n%s", isJSON, tc.contentType, body)
			}
			var list struct {
				Kind  string `json:"kind"`
				Items []struct {
					Kind string `json:"kind"`
				} `json:"items"`
			}
			if err := yaml.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Kind != "Peer" {
				t.Errorf("not the list of eu's two Peers:\n%s", body)
			}
		})
	}
	_, _, _, err := l.InputStream(context.Background(), "v1alpha1", "application/vnd.kubernetes.protobuf")
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusNotAcceptable ||
		!strings.Contains(err.Error(), "application/yaml") {
		t.Errorf("protobuf only: want 406 naming what is served, got %v", err)
	}
}
