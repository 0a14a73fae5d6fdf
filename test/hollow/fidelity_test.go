//go:build e2e

// Package hollow checks the hollow members of the benchmarks at scale
// against a real kube-apiserver: the same requests, made the way the server
// makes them on a member, must get the same answers in everything the
// server uses, so that no figure measured on hollow members comes from a
// behaviour a real member would not have.
package hollow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kilo-mesh/kilo-mesh-apiserver/hack/hollow"
	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// member is one side of the comparison, with the clients the server uses
// on a member (pkg/clusters): Nodes and the services' built-in types in
// protobuf, Peers read typed in JSON and written with the dynamic client,
// the mcs-api types in JSON.
type member struct {
	name     string
	cfg      *rest.Config
	kube     kubernetes.Interface
	peerRead rest.Interface
	peers    dynamic.NamespaceableResourceInterface
	mcs      mcsclient.Interface
	identity *http.Client

	transcript []string
}

func newMember(t *testing.T, name string, cfg *rest.Config) *member {
	t.Helper()
	m := &member{name: name, cfg: cfg}
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	var err error
	if m.kube, err = kubernetes.NewForConfig(kubeCfg); err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := kilov1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	peerCfg := rest.CopyConfig(cfg)
	peerCfg.GroupVersion = &kilov1alpha1.SchemeGroupVersion
	peerCfg.APIPath = "/apis"
	peerCfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	peerCfg.ContentType = runtime.ContentTypeJSON
	if m.peerRead, err = rest.RESTClientFor(peerCfg); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.peers = dyn.Resource(kilov1alpha1.PeerResource)
	if m.mcs, err = mcsclient.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.identity = &http.Client{Transport: tr, CheckRedirect: memberaccess.NoRedirects, Timeout: 10 * time.Second}
	return m
}

// note records one answer in the member's transcript.
func (m *member) note(format string, args ...any) {
	m.transcript = append(m.transcript, fmt.Sprintf(format, args...))
}

// outcome is what the server makes of an answer: success, or the status
// code and reason it tests errors by (apierrors.IsConflict and the like).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%d %s", status.Status().Code, status.Status().Reason)
	}
	return "error"
}

func TestHollowMemberAnswersAsAKubeAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := framework.StartT(t, framework.Options{
		Clusters: 1,
		// Nodes without kubelets: no controller may write to them while
		// the transcript is taken.
		ExtraControllerManagerArgs: []string{"--controllers=*,-node-lifecycle-controller,-node-ipam-controller"},
	})
	if err := env.InstallMCSCRDs(ctx, 0); err != nil {
		t.Fatal(err)
	}
	hm, err := hollow.NewMember("fidelity")
	if err != nil {
		t.Fatal(err)
	}
	defer hm.Close()

	real := newMember(t, "kube-apiserver", env.RESTConfig(0, framework.UserAdmin))
	hol := newMember(t, "hollow member", hm.RESTConfig())
	for _, m := range []*member{real, hol} {
		replay(ctx, t, m)
	}
	if len(real.transcript) != len(hol.transcript) {
		t.Errorf("the transcripts differ in length: %d answers from the kube-apiserver, %d from the hollow member", len(real.transcript), len(hol.transcript))
	}
	for i := range min(len(real.transcript), len(hol.transcript)) {
		if real.transcript[i] != hol.transcript[i] {
			t.Errorf("answer %d differs:\n  kube-apiserver: %s\n  hollow member:  %s", i, real.transcript[i], hol.transcript[i])
		}
	}
	// A watch from a resourceVersion the member no longer holds: a
	// kube-apiserver may still replay it from etcd until compaction, where a
	// hollow member, whose history is shorter, answers 410 Gone at once and
	// the informer relists (the costlier path for the server).
	if got := firstEvent(ctx, real, "2"); got != "ERROR 410 Expired" && got != "ADDED" && got != "MODIFIED" {
		t.Errorf("kube-apiserver, watch from resourceVersion 2: %s, want 410 Gone or a replay", got)
	}
	if got := firstEvent(ctx, hol, "2"); got != "ERROR 410 Expired" {
		t.Errorf("hollow member, watch from resourceVersion 2: %s, want 410 Gone", got)
	}
	if t.Failed() {
		t.Logf("kube-apiserver transcript:\n%s", strings.Join(real.transcript, "\n"))
		t.Logf("hollow member transcript:\n%s", strings.Join(hol.transcript, "\n"))
	}
}

// replay makes the server's requests on m, in the order the server makes
// them on a new member, and records the answers.
func replay(ctx context.Context, t *testing.T, m *member) {
	t.Helper()
	for _, step := range []struct {
		name string
		run  func(context.Context, *member) error
	}{
		{"probe", probe},
		{"identity", identity},
		{"nodes", nodesListWatch},
		{"peers", peerWrites},
		{"peer watch", peerWatch},
		{"services", servicesObjects},
		{"refusals", refusals},
	} {
		if err := step.run(ctx, m); err != nil {
			t.Fatalf("%s, %s: %v", m.name, step.name, err)
		}
	}
}
