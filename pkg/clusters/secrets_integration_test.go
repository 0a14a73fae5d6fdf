//go:build integration

package clusters

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

func (h *harness) testSecretRotation(t *testing.T) {
	ns := h.namespace(t)
	on1, on2 := h.createNode(t, member1, "only-on-1"), h.createNode(t, member2, "only-on-2")
	m, changes, mesh := h.followMember(t, ns, "rot", member1)
	if st := m.Snapshot(mesh)["member"]; !hasNode(st, on1) || hasNode(st, on2) {
		t.Fatalf("member shows the wrong cluster before rotation")
	}
	hostNodes := m.Snapshot(mesh)["host"].Nodes.Len()
	// Admission reads the Secrets of stored meshes from these watches.
	if data, known := m.CachedKubeconfig(types.NamespacedName{Namespace: ns, Name: "member"}, meshv1alpha1.DefaultKubeconfigKey); !known || len(data) == 0 {
		t.Errorf("the watched Secret: %d bytes, known %v", len(data), known)
	}
	if _, known := m.CachedKubeconfig(types.NamespacedName{Namespace: ns, Name: "unreferenced"}, meshv1alpha1.DefaultKubeconfigKey); known {
		t.Error("a Secret no mesh references is known")
	}

	// Watch the other cluster's state all along the rotations: no gap.
	var gaps []string
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(5 * time.Millisecond):
			}
			st := m.Snapshot(mesh)["host"]
			if err := usable(st); err != nil || st.Nodes.Len() != hostNodes {
				gaps = append(gaps, fmt.Sprintf("%v nodes=%d", err, st.Nodes.Len()))
			}
		}
	}()

	// To another cluster.
	changes.reset()
	start := time.Now()
	h.putSecret(t, ns, "member", h.kubeconfig(member2, framework.UserAdmin))
	framework.EventuallyT(t, 30*time.Second, "rotated to member 2", func() error {
		st := m.Snapshot(mesh)["member"]
		if err := usable(st); err != nil {
			return err
		}
		if !hasNode(st, on2) || hasNode(st, on1) {
			return errors.New("still the old cluster's nodes")
		}
		return nil
	})
	t.Logf("Secret pointed at another cluster: new caches synced %s after the update", time.Since(start).Round(time.Millisecond))
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))
	framework.EventuallyT(t, 5*time.Second, "old caches stopped", func() error {
		if s := m.stats(); s.Clusters != 2 || s.Informers != 4 {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})

	// To credentials without rights on that cluster: reachable, forbidden.
	h.putSecret(t, ns, "member", h.kubeconfig(member2, framework.UserTenantA))
	framework.EventuallyT(t, 30*time.Second, "forbidden credentials reported", func() error {
		st := m.Snapshot(mesh)["member"]
		if st.Reason != memberaccess.ErrForbidden || !st.Reachable || st.Synced {
			return fmt.Errorf("reachable=%v synced=%v reason=%q err=%q", st.Reachable, st.Synced, st.Reason, st.LastError)
		}
		if strings.Contains(st.LastError, h.env.Token(framework.UserTenantA)) {
			t.Errorf("LastError holds the token: %q", st.LastError)
		}
		return nil
	})
	if !m.Settled(mesh) {
		t.Error("a forbidden cluster holds readiness")
	}

	// To new valid credentials: usable again, no restart.
	h.putSecret(t, ns, "member", h.kubeconfig(member2, userReader))
	framework.EventuallyT(t, 30*time.Second, "usable with new credentials", allUsable(m, mesh))
	if st := m.Snapshot(mesh)["member"]; !hasNode(st, on2) {
		t.Error("new credentials: node missing")
	}

	close(stopSampling)
	<-sampled
	if len(gaps) > 0 {
		t.Errorf("the host cluster's state had %d gaps during rotations, first: %s", len(gaps), gaps[0])
	}
}

func (h *harness) testRefusals(t *testing.T) {
	ns := h.namespace(t)
	token := h.env.Token(framework.UserAdmin)
	withExec := h.mutatedKubeconfig(t, member1, framework.UserAdmin, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	})
	plainHTTP := h.mutatedKubeconfig(t, member1, framework.UserAdmin, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.Server = strings.Replace(c.Server, "https://", "http://", 1)
	})
	insecure := h.mutatedKubeconfig(t, member1, framework.UserAdmin, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
	})
	h.putSecret(t, ns, "exec", withExec)
	h.putSecret(t, ns, "http", plainHTTP)
	h.putSecret(t, ns, "insecure", insecure)
	h.putSecret(t, ns, "garbage", []byte("current-context: [\n"+token))
	if _, err := h.env.Client(framework.HostCluster, framework.UserAdmin).CoreV1().Secrets(ns).Create(h.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "wrong-key", Namespace: ns}, Data: map[string][]byte{"config": h.kubeconfig(member1, framework.UserAdmin)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	noRef := meshv1alpha1.ClusterEntry{Name: "no-ref"}
	mesh := newMesh(ns, "bad", localEntry("host"), remoteEntry("exec", "exec"), remoteEntry("http", "http"),
		remoteEntry("insecure", "insecure"), remoteEntry("garbage", "garbage"), remoteEntry("wrong-key", "wrong-key"),
		remoteEntry("missing", "missing"), noRef)
	m, changes := h.startManager(t)
	m.Follow(mesh)
	want := map[string]memberaccess.Reason{
		"exec": memberaccess.ErrExecPlugin, "http": memberaccess.ErrNotHTTPS, "insecure": memberaccess.ErrInsecureSkipTLSVerify, "garbage": memberaccess.ErrKubeconfigInvalid,
		"wrong-key": memberaccess.ErrSecretKeyNotFound, "missing": memberaccess.ErrSecretNotFound, "no-ref": memberaccess.ErrNoSecretRef,
	}
	framework.EventuallyT(t, 30*time.Second, "refusals reported", func() error {
		snap := m.Snapshot(mesh)
		if err := usable(snap["host"]); err != nil {
			return err
		}
		for name, reason := range want {
			st := snap[name]
			if st.Reason != reason || st.Reachable || st.Synced || !strings.Contains(st.LastError, string(reason)) {
				return fmt.Errorf("%s: reason %q err %q, want %s", name, st.Reason, st.LastError, reason)
			}
		}
		return nil
	})
	for name, st := range m.Snapshot(mesh) {
		t.Logf("%s: %s", name, st.LastError)
		if strings.Contains(st.LastError, token) || strings.Contains(st.LastError, "BEGIN") {
			t.Errorf("%s: LastError quotes secret content: %q", name, st.LastError)
		}
	}
	if !m.Settled(mesh) {
		t.Error("refused clusters hold readiness")
	}
	if s := m.stats(); s.Clusters != 1 {
		t.Errorf("refused kubeconfigs got caches: %+v", s)
	}
	if _, err := m.Members(mesh)["exec"].Peers(); !errors.Is(err, memberaccess.ErrExecPlugin) {
		t.Errorf("PeerClient of a refused cluster: %v", err)
	}

	// Fixing a Secret, or creating the missing one, takes effect live.
	changes.reset()
	h.putSecret(t, ns, "exec", h.kubeconfig(member1, framework.UserAdmin))
	h.putSecret(t, ns, "missing", h.kubeconfig(member2, framework.UserAdmin))
	framework.EventuallyT(t, 30*time.Second, "fixed clusters usable", func() error {
		snap := m.Snapshot(mesh)
		for _, name := range []string{"exec", "missing"} {
			if err := usable(snap[name]); err != nil {
				return err
			}
		}
		return nil
	})
	framework.EventuallyT(t, 5*time.Second, "change reported", changes.seen(meshKey(mesh)))

	// The administrator may allow insecure-skip-tls-verify.
	lax, _ := h.startManager(t, func(c *Config) { c.AllowInsecureSkipTLSVerify = true })
	laxMesh := newMesh(ns, "lax", localEntry("host"), remoteEntry("insecure", "insecure"))
	lax.Follow(laxMesh)
	framework.EventuallyT(t, 30*time.Second, "insecure allowed", allUsable(lax, laxMesh))
}
