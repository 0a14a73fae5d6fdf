package join

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestAwaitGone: a namespace being deleted is waited for until it is gone,
// and one that stays is reported after the bound, naming it.
func TestAwaitGone(t *testing.T) {
	defer func(w, p time.Duration) { terminationWait, terminationPoll = w, p }(terminationWait, terminationPoll)
	terminationWait, terminationPoll = 2*time.Second, 10*time.Millisecond
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(memberName)
	now := metav1.Now()
	ns.SetDeletionTimestamp(&now)
	for _, tt := range []struct {
		name    string
		goneAt  time.Duration // 0: never
		wantErr string
	}{
		{name: "gone after a while", goneAt: 100 * time.Millisecond},
		{name: "still there", wantErr: "still being deleted after 2s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{gvr: "NamespaceList"}, ns.DeepCopy())
			res := dyn.Resource(gvr)
			// Set before the deletion: a wait that ends finds it set, one
			// that ends early does not (the clock would say nothing on a
			// loaded machine, where the timer may fire late or early).
			var deleting atomic.Bool
			if tt.goneAt > 0 {
				time.AfterFunc(tt.goneAt, func() {
					deleting.Store(true)
					_ = res.Delete(context.Background(), memberName, metav1.DeleteOptions{})
				})
			}
			err := awaitGone(context.Background(), res, "Namespace", memberName)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr == "" && !deleting.Load():
				t.Error("returned before the namespace was deleted")
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), memberName)):
				t.Errorf("error %v, want one saying %q and naming %s", err, tt.wantErr, memberName)
			}
		})
	}
}
