package framework

// The server's registration with the aggregation layer, and the waits for
// it to be ready and Available.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// runAnnotation on the APIService names the server's current run (its pid).
const runAnnotation = "e2e.kilo-mesh.test/run"

// register points the aggregation layer at the server: an ExternalName
// Service (Endpoints cannot hold loopback addresses) and the APIService.
// Each run stamps the APIService, as a new Pod's endpoints would in a
// cluster: the aggregator then fetches the group's discovery at once rather
// than at the end of the backoff its failed fetches left.
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
		"metadata": map[string]any{
			"name":        APIServiceName,
			"annotations": map[string]any{runAnnotation: strconv.Itoa(m.Pid())},
		},
		"spec": spec,
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

// WaitAvailable waits until the aggregation layer serves the group as
// kubectl sees it: the APIService Available, the group's resources current
// in the host's aggregated discovery (a fetch that failed while the server
// was down leaves them stale there, and kubectl then says the server
// "doesn't have a resource type"), and kubectl itself, with the
// environment's discovery cache, resolving the short name.
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
	err = m.proc.waitFor(ctx, "aggregated discovery of "+MeshGroup, 200*time.Millisecond, func(context.Context) error {
		return servedInDiscovery(disco, ClusterMeshGVR)
	})
	if err != nil {
		return err
	}
	return m.proc.waitFor(ctx, "kubectl get cmesh", 200*time.Millisecond, func(ctx context.Context) error {
		_, _, err := m.env.Kubectl(ctx, HostCluster, UserAdmin, "get", "cmesh", "-n", MeshNamespace, "-o", "name")
		return err
	})
}

// servedInDiscovery says why the aggregated discovery document (/api and
// /apis, what kubectl reads) does not list gvr's resource as current, nil
// when it does.
func servedInDiscovery(disco discovery.DiscoveryInterface, gvr schema.GroupVersionResource) error {
	gv := gvr.GroupVersion()
	_, lists, err := disco.ServerGroupsAndResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		if gvErr, ok := failed.Groups[gv]; ok {
			return gvErr
		}
	} else if err != nil {
		return err
	}
	for _, list := range lists {
		if list.GroupVersion == gv.String() && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
			return nil
		}
	}
	return fmt.Errorf("%s not in the aggregated discovery of %s", gvr.Resource, gv)
}
