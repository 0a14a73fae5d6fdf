package apiserver

import (
	"context"
	"fmt"
	"sync"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// background is the one owner of the server's own goroutines (caches, the
// reconciler): each runs until the context of the post-start hook that
// started it ends, at shutdown, and the server's Destroy waits for them
// all, so that the reconciler has released its Lease and the member caches
// have closed their connections before the storage, then the embedded etcd,
// close and the process exits.
type background struct {
	wg sync.WaitGroup
}

// newBackground registers the wait in generic's Destroy. Destroy runs what
// was registered in order, so this must be called before the API group's
// storage registers its own.
func newBackground(generic *genericapiserver.GenericAPIServer) *background {
	b := &background{}
	generic.RegisterDestroyFunc(b.wg.Wait)
	return b
}

// hook adds a post-start hook that starts each of run in a goroutine of
// its own.
func (b *background) hook(generic *genericapiserver.GenericAPIServer, name string, run ...func(context.Context)) error {
	if err := generic.AddPostStartHook(name, func(ctx genericapiserver.PostStartHookContext) error {
		for _, f := range run {
			b.wg.Go(func() { f(ctx) })
		}
		return nil
	}); err != nil {
		return fmt.Errorf("adding post-start hook %s: %w", name, err)
	}
	return nil
}
