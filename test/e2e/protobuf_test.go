//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Accept headers of the clients the ecosystem points at an aggregated
// server: client-go's components (the namespace controller, the garbage
// collector) accept protobuf first, the metadata client asks for
// PartialObjectMetadata, kubectl for Tables.
const (
	acceptProtobufOrJSON  = "application/vnd.kubernetes.protobuf, application/json"
	acceptProtobufOnly    = "application/vnd.kubernetes.protobuf"
	acceptTableProtobuf   = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
	acceptPartialProtobuf = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io, application/json"
)

// protobufMagic starts every Kubernetes protobuf envelope.
var protobufMagic = []byte("k8s\x00")

// TestProtobufClients: every resource and view answers a client that
// accepts protobuf with an encoded object or, by negotiation, JSON; a client
// that accepts nothing else the server can encode gets 406, never a 500.
func TestProtobufClients(t *testing.T) {
	ns := namespace(t, "proto")
	if _, stderr, err := kubectlIn(t, admin, manifest(t, "valid.yaml", "pb"), "-n", ns, "create", "-f", "-"); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	group := "/apis/" + framework.MeshGroup
	version := group + "/" + framework.MeshVersion
	mesh := version + "/namespaces/" + ns + "/clustermeshes/pb"
	paths := []struct {
		name, path string
		code       int
		// table: kubectl get prints it as a Table; list: the metadata
		// client reads it as a PartialObjectMetadataList.
		table, list bool
	}{
		{"list meshes", version + "/namespaces/" + ns + "/clustermeshes", http.StatusOK, true, true},
		{"list meshes of every namespace", version + "/clustermeshes", http.StatusOK, true, true},
		{"get mesh", mesh, http.StatusOK, true, false},
		{"status", mesh + "/status", http.StatusOK, false, false},
		{"plan", mesh + "/plan", http.StatusOK, true, false},
		{"peers", mesh + "/peers", http.StatusOK, true, false},
		{"peers of one cluster", mesh + "/peers?cluster=west", http.StatusOK, true, false},
		{"peers as WireGuard", mesh + "/peers?cluster=west&format=wireguard", http.StatusOK, false, false},
		{"peers as DOT", mesh + "/peers?format=dot", http.StatusOK, false, false},
		{"list grants", version + "/clustermeshgrants", http.StatusOK, true, true},
		{"get grant", version + "/clustermeshgrants/" + framework.NamespaceTenantA, http.StatusOK, true, false},
		{"missing mesh (a Status)", version + "/namespaces/" + ns + "/clustermeshes/absent", http.StatusNotFound, false, false},
		{"bad view option (a Status)", mesh + "/peers?format=nonsense", http.StatusBadRequest, false, false},
		{"version discovery", version, http.StatusOK, false, false},
		{"group discovery", group, http.StatusOK, false, false},
	}
	hc, err := rest.HTTPClientFor(env.RESTConfig(framework.HostCluster, admin))
	if err != nil {
		t.Fatal(err)
	}
	base := env.RESTConfig(framework.HostCluster, admin).Host
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			// The plan and the views need the mesh's clusters read once.
			framework.EventuallyT(t, viewsSettle, "a settled answer", func() error {
				code, _, _ := get(t, hc, base+p.path, acceptProtobufOrJSON)
				if code != p.code {
					return fmt.Errorf("code %d, want %d", code, p.code)
				}
				return nil
			})
			code, ctype, body := get(t, hc, base+p.path, acceptProtobufOrJSON)
			if code != p.code {
				t.Fatalf("protobuf or JSON: code %d, want %d: %s", code, p.code, clip(body))
			}
			checkBody(t, ctype, body)

			code, ctype, body = get(t, hc, base+p.path, acceptProtobufOnly)
			switch {
			case code == http.StatusNotAcceptable:
				checkBody(t, ctype, body)
			case code == p.code:
				if !bytes.HasPrefix(body, protobufMagic) {
					t.Errorf("protobuf only: code %d with %s, not protobuf: %s", code, ctype, clip(body))
				}
			default:
				t.Errorf("protobuf only: code %d, want %d or 406: %s", code, p.code, clip(body))
			}

			if !p.table {
				return
			}
			code, ctype, body = get(t, hc, base+p.path, acceptTableProtobuf)
			if code != http.StatusOK || kindOf(t, ctype, body) != "Table" {
				t.Errorf("a Table, protobuf first: code %d, %s: %s", code, ctype, clip(body))
			}
			if !p.list {
				return
			}
			code, ctype, body = get(t, hc, base+p.path, acceptPartialProtobuf)
			if code != http.StatusOK || kindOf(t, ctype, body) != "PartialObjectMetadataList" {
				t.Errorf("PartialObjectMetadataList, protobuf first: code %d, %s: %s", code, ctype, clip(body))
			}
		})
	}

	t.Run("the metadata client", func(t *testing.T) {
		ctx := context.Background()
		client, err := metadata.NewForConfig(env.RESTConfig(framework.HostCluster, admin))
		if err != nil {
			t.Fatal(err)
		}
		list, err := client.Resource(framework.ClusterMeshGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "pb" {
			t.Fatalf("listing meshes: %v, %+v", err, list)
		}
		one, err := client.Resource(framework.ClusterMeshGVR).Namespace(ns).Get(ctx, "pb", metav1.GetOptions{})
		if err != nil || one.UID != list.Items[0].UID {
			t.Fatalf("getting the mesh: %v", err)
		}
		if _, err := client.Resource(framework.ClusterMeshGrantGVR).Get(ctx, framework.NamespaceTenantA, metav1.GetOptions{}); err != nil {
			t.Fatalf("getting a grant: %v", err)
		}
		// What the namespace controller does to every namespaced resource.
		if err := client.Resource(framework.ClusterMeshGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatalf("deleting the collection: %v", err)
		}
		framework.EventuallyT(t, rcConverge, "the mesh deleted", func() error {
			left, err := client.Resource(framework.ClusterMeshGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(left.Items) > 0 {
				return fmt.Errorf("%d meshes left", len(left.Items))
			}
			return nil
		})
	})
}

// get asks url with accept and returns the code, the media type and the body.
func get(t *testing.T, hc *http.Client, url, accept string) (int, string, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return resp.StatusCode, ctype, body
}

// checkBody fails the test unless body is what its media type says.
func checkBody(t *testing.T, ctype string, body []byte) {
	t.Helper()
	switch {
	case ctype == runtime.ContentTypeProtobuf:
		if !bytes.HasPrefix(body, protobufMagic) {
			t.Errorf("%s without the protobuf envelope: %s", ctype, clip(body))
		}
	case ctype == runtime.ContentTypeJSON:
		if !json.Valid(body) {
			t.Errorf("invalid JSON: %s", clip(body))
		}
	case strings.HasPrefix(ctype, "text/"):
		if len(body) == 0 {
			t.Errorf("empty %s", ctype)
		}
	default:
		t.Errorf("unexpected media type %q: %s", ctype, clip(body))
	}
}

// kindOf reads the kind of a JSON or protobuf answer.
func kindOf(t *testing.T, ctype string, body []byte) string {
	t.Helper()
	if ctype == runtime.ContentTypeProtobuf && bytes.HasPrefix(body, protobufMagic) {
		var u runtime.Unknown
		if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
			t.Errorf("invalid protobuf envelope: %v", err)
		}
		return u.Kind
	}
	if ctype != runtime.ContentTypeJSON {
		return ctype
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(body, &tm); err != nil {
		t.Errorf("invalid JSON: %v", err)
	}
	return tm.Kind
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
