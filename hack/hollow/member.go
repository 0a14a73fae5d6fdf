package hollow

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// Member is one hollow member cluster: an API server on its own loopback
// port with a CA of its own, a token it accepts, and a kube-system
// namespace of its own UID, so that the server verifies a distinct
// identity for each.
type Member struct {
	Name string
	// URL is where it serves, https://127.0.0.1:PORT.
	URL   string
	CAPEM []byte
	Token string
	// SystemUID is the UID of its kube-system namespace.
	SystemUID types.UID

	store *store
	srv   *http.Server
	ln    net.Listener
	// tokens are every token accepted: Token, and one per tenant that
	// reaches the member with credentials of its own (AddToken).
	tokensMu sync.RWMutex
	tokens   map[string]bool
	// writes counts the write requests answered (create, update, patch,
	// delete), whatever their outcome.
	writes atomic.Int64
}

// Writes is the number of write requests the member answered.
func (m *Member) Writes() int64 { return m.writes.Load() }

// NewMember starts a hollow member on a free loopback port. It holds the
// namespaces every cluster has (default, kube-system, kube-public).
func NewMember(name string) (*Member, error) {
	ca, err := framework.NewCA(name + "-ca")
	if err != nil {
		return nil, err
	}
	serving, err := ca.IssueServing(name)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &Member{
		Name: name, URL: "https://" + ln.Addr().String(), CAPEM: ca.CertPEM, Token: newToken(),
		SystemUID: uuid.NewUUID(), store: newStore(), ln: ln,
	}
	m.tokens = map[string]bool{m.Token: true}
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
		if ns == metav1.NamespaceSystem {
			obj.UID = m.SystemUID
		}
		if err := m.Seed(obj); err != nil {
			return nil, err
		}
	}
	m.store.compact()
	m.srv = &http.Server{
		Handler:           http.HandlerFunc(m.serve),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(discard{}, "", 0),
	}
	go func() { _ = m.srv.ServeTLS(ln, "", "") }()
	return m, nil
}

// discard drops the TLS handshake errors of clients that go away.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Close stops serving; open watches end.
func (m *Member) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil {
		_ = m.srv.Close()
	}
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// AddToken returns a new token the member accepts: a tenant's own
// credentials, so that the server holds one connection per tenant.
func (m *Member) AddToken() string {
	t := newToken()
	m.tokensMu.Lock()
	m.tokens[t] = true
	m.tokensMu.Unlock()
	return t
}

// Kubeconfig is a self-contained kubeconfig of the member with token, as
// a tenant puts into a Secret.
func (m *Member) Kubeconfig(token string) ([]byte, error) {
	return m.manifest().Kubeconfig(token)
}

// RESTConfig is a client configuration of the member.
func (m *Member) RESTConfig() *rest.Config { return m.manifest().RESTConfig() }

func (m *Member) manifest() ManifestMember {
	return ManifestMember{Name: m.Name, Server: m.URL, CAPEM: m.CAPEM, Token: m.Token, SystemUID: string(m.SystemUID)}
}

// Kubeconfig is a self-contained kubeconfig of the member with token.
func (mm ManifestMember) Kubeconfig(token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[mm.Name] = &clientcmdapi.Cluster{Server: mm.Server, CertificateAuthorityData: mm.CAPEM}
	cfg.AuthInfos[mm.Name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[mm.Name] = &clientcmdapi.Context{Cluster: mm.Name, AuthInfo: mm.Name}
	cfg.CurrentContext = mm.Name
	return clientcmd.Write(*cfg)
}

// RESTConfig is a client configuration of the member with its first token.
func (mm ManifestMember) RESTConfig() *rest.Config {
	return &rest.Config{Host: mm.Server, BearerToken: mm.Token, TLSClientConfig: rest.TLSClientConfig{CAData: mm.CAPEM}}
}

// serve routes a request as a kube-apiserver would: health and version to
// anyone (as its system:public-info-viewer role allows), the rest to the
// member's token only.
func (m *Member) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/readyz", "/livez", "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	case "/version":
		writeJSON(w, http.StatusOK, versionInfo)
		return
	}
	if !m.authenticated(r) {
		m.writeError(w, r, nil, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		m.writes.Add(1)
	}
	if serveDiscovery(w, r) {
		return
	}
	req, err := parsePath(r.URL.Path)
	if err != nil {
		m.writeError(w, r, nil, err)
		return
	}
	m.serveResource(w, r, req)
}

func (m *Member) authenticated(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	m.tokensMu.RLock()
	defer m.tokensMu.RUnlock()
	return m.tokens[token]
}

// request is what a resource path names.
type request struct {
	res                          *resource
	namespace, name, subresource string
}

// parsePath reads /api/v1/... and /apis/GROUP/VERSION/...: a resource, a
// namespace's resource, an object, or an object's status.
func parsePath(path string) (*request, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group, version string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, version, parts = parts[1], parts[2], parts[3:]
	default:
		return nil, apierrors.NewNotFound(gr(""), path)
	}
	req := &request{}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		if res := lookup(group, version, parts[2]); res != nil && res.namespaced {
			req.namespace, parts = parts[1], parts[2:]
		}
	}
	req.res = lookup(group, version, parts[0])
	if req.res == nil || len(parts) > 3 || (req.res.namespaced && req.namespace == "" && len(parts) > 1) {
		return nil, apierrors.NewNotFound(gr(parts[0]), path)
	}
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = parts[2]
		if req.subresource != "status" || !req.res.status {
			return nil, apierrors.NewNotFound(gr(parts[0]+"/"+parts[2]), req.name)
		}
	}
	return req, nil
}

// serveResource serves the verbs the server uses on members.
func (m *Member) serveResource(w http.ResponseWriter, r *http.Request, req *request) {
	var err error
	switch {
	case r.Method == http.MethodGet && req.name == "":
		err = m.listOrWatch(w, r, req)
	case r.Method == http.MethodGet:
		err = m.getObject(w, r, req)
	case r.Method == http.MethodPost && req.name == "":
		err = m.create(w, r, req)
	case r.Method == http.MethodPut && req.name != "":
		err = m.update(w, r, req)
	case r.Method == http.MethodPatch && req.name != "":
		err = m.patch(w, r, req)
	case r.Method == http.MethodDelete && req.name != "":
		err = m.delete(w, r, req)
	default:
		err = apierrors.NewMethodNotSupported(gr(req.res.gvr.Resource), strings.ToLower(r.Method))
	}
	if err != nil {
		m.writeError(w, r, req.res, err)
	}
}

func (m *Member) getObject(w http.ResponseWriter, r *http.Request, req *request) error {
	o := m.store.get(req.res, objectKey(req.namespace, req.name))
	if o == nil {
		return apierrors.NewNotFound(gr(req.res.gvr.Resource, req.res.gvr.Group), req.name)
	}
	return m.writeStored(w, r, req.res, http.StatusOK, o)
}

func (m *Member) listOrWatch(w http.ResponseWriter, r *http.Request, req *request) error {
	q, err := parseQuery(req.namespace, r.URL.Query())
	if err != nil {
		return err
	}
	if q.watch {
		m.serveWatch(w, r, req.res, q)
		return nil
	}
	objs, rv := m.store.list(req.res, q.match, q.after)
	if q.listRV != 0 {
		rv = q.listRV
	}
	var lm metav1.ListMeta
	if q.limit > 0 && len(objs) > q.limit {
		left := int64(len(objs) - q.limit)
		objs = objs[:q.limit]
		lm.Continue = continueToken{RV: rv, Start: objectKey(objs[len(objs)-1].meta().GetNamespace(), objs[len(objs)-1].meta().GetName())}.encode()
		lm.RemainingItemCount = &left
	}
	lm.ResourceVersion = fmt.Sprint(rv)
	items := make([]runtime.Object, len(objs))
	for i, o := range objs {
		items[i] = o.obj
	}
	list := req.res.newList(lm, items)
	list.GetObjectKind().SetGroupVersionKind(req.res.gvr.GroupVersion().WithKind(req.res.kind + "List"))
	md := negotiate(r, req.res)
	b, err := md.encode(list)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	writeBytes(w, md.contentType(false), http.StatusOK, b)
	return nil
}

// writeStored answers with an object's shared encoding.
func (m *Member) writeStored(w http.ResponseWriter, r *http.Request, res *resource, code int, o *stored) error {
	md := negotiate(r, res)
	b, err := o.encoded(md)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	writeBytes(w, md.contentType(false), code, b)
	return nil
}

// writeError answers with err's Status, in the encoding the client asked
// for when the resource is served in it.
func (m *Member) writeError(w http.ResponseWriter, r *http.Request, res *resource, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.APIVersion, s.Kind = "v1", "Status"
	md := negotiate(r, res)
	b, encErr := md.encode(&s)
	if encErr != nil {
		http.Error(w, encErr.Error(), http.StatusInternalServerError)
		return
	}
	writeBytes(w, md.contentType(false), int(s.Code), b)
}

func writeBytes(w http.ResponseWriter, contentType string, code int, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
