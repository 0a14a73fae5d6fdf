package join

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// TestInPlaceWait: join --replace in a mesh of two returns once the status
// of its generation has no departure of the entry and the old cluster
// holds no Peer of the mesh; an old cluster that cannot be read is taken
// as done once the server's departure came and went; a stuck departure
// ends the wait naming it.
func TestInPlaceWait(t *testing.T) {
	mesh := func(observed int64, departed ...meshv1alpha1.DepartedCluster) *meshv1alpha1.ClusterMesh {
		m := &meshv1alpha1.ClusterMesh{}
		m.Status.ObservedGeneration = observed
		m.Status.DepartedClusters = departed
		return m
	}
	removing := meshv1alpha1.DepartedCluster{Name: "west", Reason: meshv1alpha1.DepartureRemoving, Message: "2 Peers left"}
	unreadable := errors.New("Unauthorized")
	tests := []struct {
		name     string
		answers  []*meshv1alpha1.ClusterMesh
		counts   []int
		countErr error
		wantErr  string
	}{
		{"done once observed, no item, and the old cluster empty", []*meshv1alpha1.ClusterMesh{mesh(5)}, []int{2, 0}, nil, ""},
		{"an old status is not enough", []*meshv1alpha1.ClusterMesh{mesh(4)}, []int{0}, nil, "has not finished"},
		{"Peers left on the old cluster without an item: the server has not read the Secret yet", []*meshv1alpha1.ClusterMesh{mesh(5)}, []int{2}, nil, "still holds 2 Peers"},
		{"removing, then done", []*meshv1alpha1.ClusterMesh{mesh(5, removing), mesh(5)}, []int{0}, nil, ""},
		{"unreadable: done once the departure came and went", []*meshv1alpha1.ClusterMesh{mesh(5), mesh(5, removing), mesh(5)}, nil, unreadable, ""},
		{"unreadable and no departure seen", []*meshv1alpha1.ClusterMesh{mesh(5)}, nil, unreadable, "cannot be read with the old credential: Unauthorized"},
		{"a stuck departure", []*meshv1alpha1.ClusterMesh{mesh(5, meshv1alpha1.DepartedCluster{Name: "west", Server: "https://old", Reason: meshv1alpha1.DepartureRefused, Message: "by hand"})},
			[]int{2}, nil, "gave up removing the Peers of west (https://old): Refused: by hand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, j := 0, 0
			get := func(context.Context) (*meshv1alpha1.ClusterMesh, error) {
				m := tt.answers[min(i, len(tt.answers)-1)]
				i++
				return m, nil
			}
			count := func(context.Context) (int, error) {
				if tt.countErr != nil {
					return 0, tt.countErr
				}
				n := tt.counts[min(j, len(tt.counts)-1)]
				j++
				return n, nil
			}
			p := &inPlace{change: &clusterChange{oldServer: "https://old", newServer: "https://new"}}
			var progress bytes.Buffer
			err := p.wait(context.Background(), &progress, get, count, "west", 5, 3500*time.Millisecond)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want success", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error with %q", err, tt.wantErr)
			}
			if !strings.Contains(progress.String(), "waiting for west to leave https://old") {
				t.Errorf("no progress line: %q", progress.String())
			}
		})
	}
}
