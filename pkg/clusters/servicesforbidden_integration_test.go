//go:build integration

package clusters

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testServicesForbidden: a member reached as the member identity with its
// base rights only (artifacts/member) has its Nodes and Peers used and its
// services reported ServicesForbidden, never Synced, in the server's own
// words; the services rights (artifacts/overlays/member-services) make
// them synced; taken away again, the cluster keeps its last known objects,
// not Synced, with the reason.
func (h *harness) testServicesForbidden(t *testing.T) {
	if err := h.env.InstallMember(h.ctx, member1, framework.MemberBase); err != nil {
		t.Fatal(err)
	}
	exported := h.exportService(t, "cart", 1, true)
	kubeconfig, err := h.env.MemberKubeconfig(h.ctx, member1)
	if err != nil {
		t.Fatal(err)
	}
	ns := h.namespace(t)
	h.putSecret(t, ns, "member-1", kubeconfig)
	mesh := newMesh(ns, "m", localEntry("host"), remoteEntry("one", "member-1"))
	mesh.Spec.MultiClusterServices = meshv1alpha1.MultiClusterServicesEnabled
	m, _ := h.startManager(t)
	m.Follow(mesh)

	forbidden := func() error {
		st, err := servicesOf(m, mesh, "one")
		switch {
		case err != nil:
			return err
		case st.Reason != memberaccess.ErrServicesForbidden || st.Synced || !st.Watched:
			return fmt.Errorf("synced=%v watched=%v reason=%q err=%q; want reason %s, not synced", st.Synced, st.Watched, st.Reason, st.LastError, memberaccess.ErrServicesForbidden)
		}
		return nil
	}
	framework.EventuallyT(t, 30*time.Second, "a base-only member's services reported forbidden", forbidden)
	st, _ := servicesOf(m, mesh, "one")
	if !strings.Contains(st.LastError, "lacks its services rights") {
		t.Errorf("the reason's message %q does not say what is missing", st.LastError)
	}
	// The member's answer names the identity and the verb; the server's
	// words name neither.
	for _, answer := range []string{member.Username(), "cannot list", "is forbidden"} {
		if strings.Contains(st.LastError, answer) {
			t.Errorf("the message carries the member's answer (%q): %s", answer, st.LastError)
		}
	}
	framework.EventuallyT(t, 30*time.Second, "the base rights make the cluster's Nodes and Peers usable", func() error {
		return usable(m.Snapshot(mesh)["one"])
	})

	if err := h.env.InstallMember(h.ctx, member1, framework.MemberServices); err != nil {
		t.Fatal(err)
	}
	after := h.exportService(t, "after", 1, true)
	framework.EventuallyT(t, 60*time.Second, "the services rights make the services synced", func() error {
		st, err := servicesOf(m, mesh, "one")
		switch {
		case err != nil:
			return err
		case !st.Synced || st.Reason != "":
			return fmt.Errorf("synced=%v reason=%q err=%q", st.Synced, st.Reason, st.LastError)
		case !slices.ContainsFunc(st.Exports, func(e *mcsv1beta1.ServiceExport) bool { return e.Namespace == exported }),
			!slices.ContainsFunc(st.Exports, func(e *mcsv1beta1.ServiceExport) bool { return e.Namespace == after }):
			return fmt.Errorf("exports %v lack %s/cart or %s/after", st.Exports, exported, after)
		}
		return nil
	})

	// Taken away: open watches go on; an export fewer makes the exported
	// Services be listed again, which is refused, while what was read
	// still covers every export.
	if _, stderr, err := h.env.Kubectl(h.ctx, member1, framework.UserAdmin, "delete", "clusterrolebinding", member.ServicesClusterRoleBinding); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	mcs := mcsclient.NewForConfigOrDie(h.env.RESTConfig(member1, framework.UserAdmin))
	if err := mcs.MulticlusterV1beta1().ServiceExports(after).Delete(h.ctx, "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyT(t, 60*time.Second, "rights taken away reported forbidden", forbidden)
	st, _ = servicesOf(m, mesh, "one")
	if !slices.ContainsFunc(st.Exports, func(e *mcsv1beta1.ServiceExport) bool { return e.Namespace == exported }) || st.Since.IsZero() {
		t.Errorf("the last known exports %v (since %v) were not kept", st.Exports, st.Since)
	}
}
