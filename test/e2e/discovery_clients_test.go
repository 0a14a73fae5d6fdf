//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Aggregated discovery as client-go asks for it, protobuf first, and as JSON.
const (
	acceptAggregatedJSON     = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	acceptAggregatedProtobuf = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, " + acceptAggregatedJSON
)

// TestDiscoveryClients: the host cluster's aggregated discovery holds the
// mesh group, fresh, with every resource and subresource, in JSON and in
// protobuf; kubectl api-resources -o wide lists it without complaint.
func TestDiscoveryClients(t *testing.T) {
	hc, err := rest.HTTPClientFor(env.RESTConfig(framework.HostCluster, admin))
	if err != nil {
		t.Fatal(err)
	}
	base := env.RESTConfig(framework.HostCluster, admin).Host
	for _, accept := range []string{acceptAggregatedJSON, acceptAggregatedProtobuf} {
		t.Run(strings.SplitN(accept, ";", 2)[0], func(t *testing.T) {
			framework.EventuallyT(t, viewsSettle, "the mesh group fresh in aggregated discovery", func() error {
				code, ctype, body := get(t, hc, base+"/apis", accept)
				if code != http.StatusOK {
					return fmt.Errorf("code %d: %s", code, clip(body))
				}
				var list apidiscoveryv2.APIGroupDiscoveryList
				switch ctype {
				case runtime.ContentTypeJSON:
					if err := json.Unmarshal(body, &list); err != nil {
						return err
					}
				case runtime.ContentTypeProtobuf:
					var u runtime.Unknown
					if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
						return err
					}
					if err := list.Unmarshal(u.Raw); err != nil {
						return err
					}
				default:
					return fmt.Errorf("media type %q", ctype)
				}
				if accept == acceptAggregatedProtobuf && ctype != runtime.ContentTypeProtobuf {
					t.Errorf("the kube-apiserver answered %s to a protobuf request", ctype)
				}
				return meshGroupDiscovered(list)
			})
		})
	}

	t.Run("kubectl api-resources -o wide", func(t *testing.T) {
		out, stderr, err := env.Kubectl(context.Background(), framework.HostCluster, admin, "api-resources", "-o", "wide")
		if err != nil || strings.TrimSpace(stderr) != "" {
			t.Fatalf("kubectl api-resources: %v\n%s", err, stderr)
		}
		for _, want := range []string{"clustermeshes", "clustermeshgrants"} {
			if !slices.ContainsFunc(strings.Split(out, "\n"), func(line string) bool {
				f := strings.Fields(line)
				return len(f) > 0 && f[0] == want && strings.Contains(line, framework.MeshGroup) && strings.Contains(line, "delete")
			}) {
				t.Errorf("no line for %s with its group and verbs:\n%s", want, out)
			}
		}
	})
	t.Run("kubectl get --raw", func(t *testing.T) {
		for _, path := range []string{"/apis/" + framework.MeshGroup + "/" + framework.MeshVersion, "/apis/" + framework.MeshGroup + "/" + framework.MeshVersion + "/clustermeshes"} {
			if out := kubectl(t, admin, "get", "--raw", path); !json.Valid([]byte(out)) {
				t.Errorf("%s: not JSON: %s", path, clip([]byte(out)))
			}
		}
	})
}

// meshGroupDiscovered checks the mesh group in aggregated discovery.
func meshGroupDiscovered(list apidiscoveryv2.APIGroupDiscoveryList) error {
	for _, g := range list.Items {
		if g.Name != framework.MeshGroup {
			continue
		}
		if len(g.Versions) != 1 || g.Versions[0].Version != framework.MeshVersion {
			return fmt.Errorf("versions %+v", g.Versions)
		}
		v := g.Versions[0]
		if v.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
			return fmt.Errorf("freshness %q", v.Freshness)
		}
		want := map[string][]string{"clustermeshes": {"peers", "plan", "services", "status"}, "clustermeshgrants": nil}
		for _, r := range v.Resources {
			subs, ok := want[r.Resource]
			if !ok {
				return fmt.Errorf("unexpected resource %s", r.Resource)
			}
			var have []string
			for _, s := range r.Subresources {
				have = append(have, s.Subresource)
			}
			slices.Sort(have)
			if !slices.Equal(have, subs) {
				return fmt.Errorf("%s: subresources %v, want %v", r.Resource, have, subs)
			}
			delete(want, r.Resource)
		}
		if len(want) > 0 {
			return fmt.Errorf("resources missing: %v", want)
		}
		return nil
	}
	return fmt.Errorf("no group %s among %d", framework.MeshGroup, len(list.Items))
}
