package framework

// The server's registration with the aggregation layer, and the waits for
// it to be ready and Available.

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// register points the aggregation layer at the server: an ExternalName
// Service (Endpoints cannot hold loopback addresses) and the APIService.
func (m *MeshServer) register(ctx context.Context) error {
	dyn := m.env.Dynamic(HostCluster, UserAdmin)
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": MeshServiceName, "namespace": MeshNamespace},
		"spec": map[string]any{
			"type":         "ExternalName",
			"externalName": "localhost",
			"ports": []any{map[string]any{
				"name": "https", "port": int64(m.ServicePort), "protocol": "TCP", "targetPort": int64(m.ServicePort),
			}},
		},
	}}
	apply := metav1.ApplyOptions{FieldManager: "kilo-mesh-e2e", Force: true}
	svcGVR := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	if _, err := dyn.Resource(svcGVR).Namespace(MeshNamespace).Apply(ctx, MeshServiceName, svc, apply); err != nil {
		return fmt.Errorf("applying Service %s/%s: %w", MeshNamespace, MeshServiceName, err)
	}
	spec := map[string]any{
		"group":                MeshGroup,
		"version":              MeshVersion,
		"groupPriorityMinimum": int64(1000),
		"versionPriority":      int64(15),
		"service": map[string]any{
			"name": MeshServiceName, "namespace": MeshNamespace, "port": int64(m.ServicePort),
		},
	}
	// A self-managed server fills the caBundle in itself.
	if !m.SelfManagedCert {
		spec["caBundle"] = base64.StdEncoding.EncodeToString(m.CABundle)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": APIServiceName},
		"spec":       spec,
	}}
	if _, err := dyn.Resource(apiServiceGVR).Apply(ctx, APIServiceName, apiService, apply); err != nil {
		return fmt.Errorf("applying APIService %s: %w", APIServiceName, err)
	}
	return nil
}

// WaitReady waits until the server's /readyz answers 200. A self-managed
// server is verified with the bundle its Secret holds at each try: a
// server that finds an expired CA there replaces it after it started.
func (m *MeshServer) WaitReady(ctx context.Context) error {
	if !m.SelfManagedCert {
		return waitReadyz(ctx, m.proc, m.DirectRESTConfig(UserAdmin), m.URL)
	}
	return m.proc.waitFor(ctx, "/readyz", 200*time.Millisecond, func(ctx context.Context) error {
		if err := m.readCABundle(ctx); err != nil {
			return err
		}
		hc, err := rest.HTTPClientFor(m.DirectRESTConfig(UserAdmin))
		if err != nil {
			return err
		}
		defer hc.CloseIdleConnections()
		return readyz(ctx, hc, m.URL)
	})
}

// readCABundle sets CABundle to the bundle of the self-managed
// certificate's Secret, once the server has filled it in.
func (m *MeshServer) readCABundle(ctx context.Context) error {
	s, err := m.env.Client(HostCluster, UserAdmin).CoreV1().Secrets(MeshNamespace).Get(ctx, MeshServingCertSecret, metav1.GetOptions{})
	if err != nil {
		return err
	}
	bundle := s.Data["ca-bundle.crt"]
	if len(bundle) == 0 {
		return fmt.Errorf("Secret %s/%s has no ca-bundle.crt yet", MeshNamespace, MeshServingCertSecret)
	}
	m.CABundle = bundle
	return nil
}

// WaitAvailable waits until the APIService is Available and the host
// cluster serves the group's discovery document.
func (m *MeshServer) WaitAvailable(ctx context.Context) error {
	dyn := m.env.Dynamic(HostCluster, UserAdmin).Resource(apiServiceGVR)
	err := m.proc.waitFor(ctx, "APIService "+APIServiceName+" Available", 200*time.Millisecond, func(ctx context.Context) error {
		obj, err := dyn.Get(ctx, APIServiceName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasCondition(obj, "Available", "True") {
			return fmt.Errorf("%s", conditionMessage(obj, "Available"))
		}
		return nil
	})
	if err != nil {
		return err
	}
	disco := m.env.Client(HostCluster, UserAdmin).Discovery()
	return m.proc.waitFor(ctx, "discovery of "+MeshGroup, 200*time.Millisecond, func(ctx context.Context) error {
		list, err := disco.ServerResourcesForGroupVersion(MeshGroup + "/" + MeshVersion)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == ClusterMeshGVR.Resource }) {
			return fmt.Errorf("%s not in discovery of %s/%s", ClusterMeshGVR.Resource, MeshGroup, MeshVersion)
		}
		return nil
	})
}
