// Package storagetest runs the server's own storage in a test process: the
// embedded etcd of pkg/etcd, with the storage options the server's flags
// give it. It is apart from package framework so that the tests of the
// storage do not link the control-plane framework and vice versa.
package storagetest

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apiserver/pkg/registry/generic"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/etcd"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// RESTOptions starts an embedded etcd for the test, stopped when it ends,
// and returns the REST options the server would build from opts on it:
// its prefix, codec, encoding version, resource prefixes and watch cache.
// Pass the options of the server's own defaults
// (apiserver.NewOptions().RecommendedOptions.Etcd), so that the tests store
// meshes exactly where and as the server does. opts is not modified.
func RESTOptions(t testing.TB, opts *genericoptions.EtcdOptions) generic.RESTOptionsGetter {
	t.Helper()
	ports, err := framework.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	server, err := etcd.Start(context.Background(), etcd.Config{
		DataDir:   t.TempDir(),
		ClientURL: client,
		PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
	})
	if err != nil {
		t.Fatalf("starting embedded etcd: %v", err)
	}
	t.Cleanup(server.Close)
	o := *opts
	o.StorageConfig.Transport.ServerList = []string{client}
	return &genericoptions.StorageFactoryRestOptionsFactory{
		Options:        o,
		StorageFactory: &genericoptions.SimpleStorageFactory{StorageConfig: o.StorageConfig},
	}
}
