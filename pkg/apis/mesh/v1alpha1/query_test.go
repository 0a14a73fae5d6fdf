package v1alpha1

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestViewQuery: the views read their parameters through the scheme, as the
// generic server does, and refuse what they do not know.
func TestViewQuery(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		query   string
		into    runtime.Object
		want    runtime.Object
		wantErr string
	}{
		{"peers: cluster and format", "cluster=a&format=dot&pretty=true", &ClusterMeshPeersOptions{}, &ClusterMeshPeersOptions{Cluster: "a", Format: "dot"}, ""},
		{"peers: a typo", "clusters=a", &ClusterMeshPeersOptions{}, nil, `unknown query parameter "clusters": the peers view takes cluster and format`},
		{"services: cluster", "cluster=a&includeObject=Object", &ClusterMeshServicesOptions{}, &ClusterMeshServicesOptions{Cluster: "a"}, ""},
		{"services: none", "", &ClusterMeshServicesOptions{Cluster: "stale"}, &ClusterMeshServicesOptions{}, ""},
		{"services: format is the peers view's", "format=dot", &ClusterMeshServicesOptions{}, nil, `unknown query parameter "format": the services view takes cluster`},
		{"services: twice", "cluster=a&cluster=b", &ClusterMeshServicesOptions{}, nil, `query parameter "cluster" must be given once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			err = scheme.Convert(&values, tc.into, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tc.into, tc.want; !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}
