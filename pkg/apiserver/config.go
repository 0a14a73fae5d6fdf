// Package apiserver wires the ClusterMesh storage and views into a generic
// Kubernetes API server.
package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/registry/clustermesh"
)

// Config is everything the server needs, explicit so tests can build one.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

// ExtraConfig holds the server's own settings beyond the generic ones.
type ExtraConfig struct{}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
}

// CompletedConfig can only be made by Complete, so New always sees defaults filled in.
type CompletedConfig struct {
	*completedConfig
}

// Server is the running mesh API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// Complete fills in the defaults of the generic config.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		GenericConfig: c.GenericConfig.Complete(),
		ExtraConfig:   &c.ExtraConfig,
	}}
}

// New builds the server and installs the mesh API group.
func (c CompletedConfig) New() (*Server, error) {
	generic, err := c.GenericConfig.New("kilo-mesh-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("building generic API server: %w", err)
	}
	meshes, status, err := clustermesh.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter)
	if err != nil {
		return nil, err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(meshv1alpha1.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap[meshv1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"clustermeshes":        meshes,
		"clustermeshes/status": status,
	}
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("installing %s: %w", meshv1alpha1.GroupName, err)
	}
	return &Server{GenericAPIServer: generic}, nil
}
