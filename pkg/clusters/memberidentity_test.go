package clusters

import (
	"context"
	"errors"
	"testing"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// TestNotLocal: a remote cluster answering with the local cluster's
// kube-system UID is refused whatever CA it is verified under, and no remote
// identity is accepted before the local one is known.
func TestNotLocal(t *testing.T) {
	known := func(context.Context) (string, error) { return "local-uid", nil }
	unknown := func(context.Context) (string, error) { return "", errors.New("forbidden") }
	for _, tc := range []struct {
		name  string
		local func(context.Context) (string, error)
		id    string
		want  memberaccess.Reason
	}{
		{"another cluster", known, "remote-uid@0a1b", ""},
		{"the host through a path on its own server", known, "local-uid@0a1b", memberaccess.ErrIsLocalCluster},
		{"the host's UID under a CA of the tenant's", known, "local-uid@ffff", memberaccess.ErrIsLocalCluster},
		{"a UID that only starts like the host's", known, "local-uid-2@0a1b", ""},
		{"the local identity unknown", unknown, "remote-uid@0a1b", memberaccess.ErrPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{id: "remote", opts: clusterOptions{localUID: tc.local}}
			err := c.notLocal(context.Background(), tc.id)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Reason != tc.want):
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}
