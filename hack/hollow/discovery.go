package hollow

import (
	"encoding/json"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// versionInfo is what /version answers: the Kubernetes version the tests'
// real kube-apiservers run.
var versionInfo = version.Info{Major: "1", Minor: "36", GitVersion: framework.KubeVersion, Platform: "linux/amd64"}

// serveDiscovery answers the unaggregated discovery documents of the
// groups a hollow member serves (a client asking for the aggregated ones
// takes these by their Content-Type, as from an older kube-apiserver), and
// reports whether the path was one.
func serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch path {
	case "/api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
		return true
	case "/apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		seen := map[string]bool{}
		for _, res := range resources {
			gv := res.gvr.GroupVersion()
			if gv.Group == "" || seen[gv.Group] {
				continue
			}
			seen[gv.Group] = true
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
		writeJSON(w, http.StatusOK, list)
		return true
	}
	var gv schema.GroupVersion
	switch parts := strings.Split(strings.Trim(path, "/"), "/"); {
	case len(parts) == 2 && parts[0] == "api":
		gv = schema.GroupVersion{Version: parts[1]}
	case len(parts) == 3 && parts[0] == "apis":
		gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
	default:
		return false
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, res := range resources {
		if res.gvr.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.gvr.Resource, SingularName: strings.ToLower(res.kind), Namespaced: res.namespaced, Kind: res.kind,
			Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"},
		})
		if res.status {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: res.gvr.Resource + "/status", Namespaced: res.namespaced, Kind: res.kind, Verbs: metav1.Verbs{"get", "patch", "update"},
			})
		}
	}
	if len(list.APIResources) == 0 {
		return false // answered as a path nothing serves: 404
	}
	writeJSON(w, http.StatusOK, list)
	return true
}

// gr names a resource in an error's details.
func gr(resource string, group ...string) schema.GroupResource {
	g := schema.GroupResource{Resource: resource}
	if len(group) > 0 {
		g.Group = group[0]
	}
	return g
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBytes(w, "application/json", code, b)
}
