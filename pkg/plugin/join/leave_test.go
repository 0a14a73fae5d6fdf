package join

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestRemovalPatch(t *testing.T) {
	got, err := removalPatch(2, "north")
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/spec/clusters/2/name","value":"north"},{"op":"remove","path":"/spec/clusters/2"}]`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestWaitDeparted(t *testing.T) {
	mesh := func(observed int64, departed ...meshv1alpha1.DepartedCluster) *meshv1alpha1.ClusterMesh {
		m := &meshv1alpha1.ClusterMesh{}
		m.Status.ObservedGeneration = observed
		m.Status.DepartedClusters = departed
		return m
	}
	removing := meshv1alpha1.DepartedCluster{Name: "north", Reason: meshv1alpha1.DepartureRemoving, Message: "3 Peers left"}
	tests := []struct {
		name    string
		answers []*meshv1alpha1.ClusterMesh
		wantErr string
	}{
		{"done once the generation is observed and the item gone", []*meshv1alpha1.ClusterMesh{mesh(4), mesh(5)}, ""},
		{"an old status without the item is not done", []*meshv1alpha1.ClusterMesh{mesh(4), mesh(4)}, "has not finished leaving"},
		{"removing, then done", []*meshv1alpha1.ClusterMesh{mesh(5, removing), mesh(6)}, ""},
		{"another cluster's item does not matter", []*meshv1alpha1.ClusterMesh{mesh(5, meshv1alpha1.DepartedCluster{Name: "west", Reason: meshv1alpha1.DepartureUnreachable})}, ""},
		{"a stuck reason ends the wait naming it", []*meshv1alpha1.ClusterMesh{mesh(5, meshv1alpha1.DepartedCluster{Name: "north", Server: "https://north:443", Reason: meshv1alpha1.DepartureCredentialGone, Message: "delete them by hand"})},
			"gave up removing the Peers of north (https://north:443): CredentialGone: delete them by hand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			get := func(context.Context) (*meshv1alpha1.ClusterMesh, error) {
				m := tt.answers[min(i, len(tt.answers)-1)]
				i++
				return m, nil
			}
			var progress bytes.Buffer
			err := waitDeparted(context.Background(), &progress, get, "north", 5, 2500*time.Millisecond)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want success", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error with %q", err, tt.wantErr)
			}
			if !strings.Contains(progress.String(), "waiting for north to leave") {
				t.Errorf("no progress line: %q", progress.String())
			}
		})
	}
}
