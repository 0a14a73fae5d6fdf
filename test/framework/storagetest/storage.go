// Package storagetest runs the server's own storage in a test process: the
// embedded etcd of pkg/etcd, with the storage options the server's flags
// give it. It is apart from package framework so that the tests of the
// storage do not link the control-plane framework and vice versa.
package storagetest

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/registry/generic"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/etcd"
)

// RESTOptions starts an embedded etcd for the test, stopped when it ends,
// and returns the REST options the server would build from opts on it:
// its prefix, codec, encoding version, resource prefixes and watch cache.
// Pass the options of the server's own defaults
// (apiserver.NewOptions().RecommendedOptions.Etcd), so that the tests store
// meshes exactly where and as the server does. opts is not modified.
func RESTOptions(t testing.TB, opts *genericoptions.EtcdOptions) generic.RESTOptionsGetter {
	t.Helper()
	server, err := etcd.Start(context.Background(), etcd.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting embedded etcd: %v", err)
	}
	t.Cleanup(server.Close)
	o := *opts
	o.StorageConfig.Transport.ServerList = []string{server.ClientURL()}
	return &genericoptions.StorageFactoryRestOptionsFactory{
		Options:        o,
		StorageFactory: &genericoptions.SimpleStorageFactory{StorageConfig: o.StorageConfig},
	}
}
