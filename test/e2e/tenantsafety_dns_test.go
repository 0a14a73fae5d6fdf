//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// hostsCacheAge is how long Go's resolver trusts what it read of
// /etc/hosts, plus a margin.
const hostsCacheAge = 6 * time.Second

// testRebinding: a kubeconfig names a host, which resolves to an allowed
// address when the mesh is admitted and dialled, and then to a forbidden
// one (DNS rebinding). The server never connects there. The name resolves
// through the server's private /etc/hosts (tsServer), which the test
// rewrites: on loopback, 127.0.0.1 is allowed (--member-server-cidrs) and
// ::1 is not, and both listen on one port.
func (ts *tsEnv) testRebinding(t *testing.T) {
	var fm *framework.FakeMember
	var v6 *framework.ConnCounter
	for try := 0; ; try++ {
		fm = ts.servingMember(t, framework.FakeContent{Nodes: 2})
		var err error
		if v6, err = framework.NewConnCounterOn(fmt.Sprintf("[::1]:%d", fm.Port())); err == nil {
			break
		}
		fm.Close()
		if try == 5 {
			t.Fatalf("this attack needs the IPv6 loopback address ::1 (enable IPv6 on lo): %v", err)
		}
	}
	defer v6.Close()
	host := framework.FakeMemberHost
	server := fmt.Sprintf("https://%s:%d", host, fm.Port())
	kc, err := fm.KubeconfigFor(server)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.server.SetHosts("127.0.0.1 " + host); err != nil {
		t.Fatal(err)
	}
	time.Sleep(hostsCacheAge)

	ns := ts.namespace(t, "rebind")
	ts.putSecret(t, ns, "named", kc)
	ts.create(t, ns, ts.meshYAML("rebind", "10.175", "10.176", entryYAML("far", "named", "10.177.0.0/16", "10.178.0.0/16")))
	framework.EventuallyT(t, rcConverge, "the name dialled at 127.0.0.1", func() error {
		for _, cs := range ts.get(t, ns, "rebind").Status.Clusters {
			if cs.Name == "far" && cs.Reachable && cs.Nodes == 2 {
				return nil
			}
		}
		return fmt.Errorf("far not read yet: %+v", ts.get(t, ns, "rebind").Status.Clusters)
	})

	// The name now resolves to ::1 only; the connections the server holds
	// are dropped, so that it must dial again.
	if err := ts.server.SetHosts("::1 " + host); err != nil {
		t.Fatal(err)
	}
	time.Sleep(hostsCacheAge)
	fm.DropConnections()
	dialled := fm.Connections()
	framework.EventuallyT(t, rcConverge, "the rebound address refused", func() error {
		return clusterError(ts.get(t, ns, "rebind"), "far", "ServerNotAllowed")
	})
	if m := ts.get(t, ns, "rebind"); clusterError(m, "far", "::1") != nil {
		t.Errorf("the refusal does not name the address dialled: %v", clusterError(m, "far", "::1"))
	}
	if n := v6.Connections(); n != 0 {
		t.Errorf("the rebound address ::1 got %d connections", n)
	}
	if n := fm.Connections() - dialled; n != 0 {
		t.Errorf("the server connected %d times to 127.0.0.1 after the name left it", n)
	}
	// Admission resolves the name as it is now.
	err = ts.tryCreate(t, ns, ts.meshYAML("rebind2", "10.179", "10.180", entryYAML("far", "named", "10.181.0.0/16", "10.182.0.0/16")))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "::1") {
		t.Errorf("a new mesh naming the rebound server: %v", err)
	}
	ts.delete(t, ns, "rebind")
	if err := ts.server.SetHosts(); err != nil {
		t.Error(errors.Join(errors.New("restoring the server's /etc/hosts"), err))
	}
}
