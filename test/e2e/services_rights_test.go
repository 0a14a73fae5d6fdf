//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// testBaseOnlyMember: cluster two, reached as the member identity, is left
// with its base rights as its administrator would leave it (kubectl delete
// -f artifacts/components/member-services/rbac.yaml). Once a list there is
// refused (an export of two's fewer makes it list again), the view and a
// Warning event give two the reason ServicesForbidden with the command that
// grants the rights, in the server's words, not the member's answer. From
// then nothing is written to two nor tried (its import keeps every
// resourceVersion, and the server logs no pass that wrote there or failed
// to, while cluster one's import of the same export takes a new endpoint),
// and nothing is deleted from it. The rights given again (kubectl apply -k
// artifacts/overlays/member-services), two's import follows.
func (s *svcEnv) testBaseOnlyMember(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	grant := func() {
		s.env.KubectlT(t, 2, framework.UserAdmin, "apply", "-k", filepath.Join(root, "artifacts", "overlays", "member-services"))
	}
	ns := s.namespace(t, 1, 2)
	s.exportedToBoth(t, ns, "rights", "10.11.1.40")
	t.Cleanup(func() { s.unexport(t, 1, ns, "rights") })
	s.backend(t, 2, ns, "trigger", nil, nil)
	s.export(t, 2, ns, "trigger")
	s.waitImported(t, 1, ns, "trigger")

	s.env.KubectlT(t, 2, framework.UserAdmin, "delete", "-f", filepath.Join(root, "artifacts", "components", "member-services", "rbac.yaml"))
	t.Cleanup(grant) // also when the test fails half way
	// Open watches go on; an export fewer makes the server list two's
	// exported Services again, which is refused, while all it had read
	// still covers two's exports.
	s.unexport(t, 2, ns, "trigger")
	s.wantViewReason(t, "two", string(memberaccess.ErrServicesForbidden))
	v, err := s.view()
	if err != nil {
		t.Fatal(err)
	}
	fix := fmt.Sprintf("kubectl mesh join svc -n %s --name two --member-kubeconfig FILE --services", s.ns)
	for _, c := range v.Clusters {
		if c.Cluster != "two" {
			continue
		}
		if !strings.Contains(c.Message, fix) || !strings.Contains(c.Message, "artifacts/overlays/member-services") {
			t.Errorf("the view's message for two does not say how to grant the rights (%q): %s", fix, c.Message)
		}
		for _, answer := range []string{member.Username(), "cannot list", "is forbidden"} {
			if strings.Contains(c.Message, answer) {
				t.Errorf("the view's message carries the member's answer (%q): %s", answer, c.Message)
			}
		}
	}
	s.wantEvent(t, string(memberaccess.ErrServicesForbidden), fix)
	// From here the server does not even try: RBAC would refuse a write,
	// which the log would show as a failed pass.
	before, err := s.imported(2, ns, "rights")
	if err != nil {
		t.Fatal(err)
	}
	triesBefore := s.writesTo("two")

	// A change of the export reaches one, not two.
	s.readyPod(t, 1, ns, "rights", "rights-more", "10.11.1.41")
	framework.EventuallyT(t, svcConverge, "cluster one's import takes the new endpoint", s.endpointsOf(1, ns, "rights", 2))
	// The pass that wrote one writes two beside it, if at all; a margin.
	time.Sleep(3 * time.Second)
	after, err := s.imported(2, ns, "rights")
	if err != nil {
		t.Fatalf("two's import after its rights were taken away: %v", err)
	}
	if versions(after) != versions(before) {
		t.Errorf("two's import was written without the rights: %s -> %s", versions(before), versions(after))
	}
	if tries := s.writesTo("two"); tries != triesBefore {
		t.Errorf("the server wrote or tried to write to two without the rights: %d passes logged writes or failures, %d before", tries, triesBefore)
	}

	grant()
	framework.EventuallyT(t, 2*svcConverge, "two's import follows once the rights are given", s.endpointsOf(2, ns, "rights", 2))
}

// endpointsOf is nil once cluster's import of ns/name carries n endpoints.
func (s *svcEnv) endpointsOf(cluster int, ns, name string, n int) func() error {
	return func() error {
		imp, err := s.imported(cluster, ns, name)
		if err != nil {
			return err
		}
		if len(imp.endpoints()) != n {
			return fmt.Errorf("endpoints %v, want %d", imp.endpoints(), n)
		}
		return nil
	}
}

// writesTo counts the server's log lines of services passes that wrote to
// cluster, or failed to.
func (s *svcEnv) writesTo(cluster string) int {
	logs := s.server.Logs()
	return strings.Count(logs, `"Services objects written" cluster="`+cluster+`"`) +
		len(regexp.MustCompile(`cluster `+regexp.QuoteMeta(cluster)+`: \d+ failed`).FindAllStringIndex(logs, -1))
}
