//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/validation"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// The admission load attack: loops of server-side dry-run creates of the
// largest mesh, each entry naming a Secret of its own (none exists).
const (
	admissionAttackLoops = 32
	admissionAttackFor   = 20 * time.Second
	innocentCreates      = 5
)

// testAdmissionLoad: one tenant loops dry-run creates of a mesh of the most clusters a mesh may name
// while another creates ordinary meshes. The innocent's creates succeed;
// the attacker gets its answers or 429 with Retry-After, never a 500 nor
// a rate limiter's text. The delays are logged, not asserted.
func (ts *tsEnv) testAdmissionLoad(t *testing.T) {
	attackerNS := ts.namespace(t, "admission-load")
	var entries strings.Builder
	for i := range validation.MaxClusters - 1 {
		entries.WriteString(entryYAML(fmt.Sprintf("c%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("10.194.%d.0/24", i), fmt.Sprintf("10.195.%d.0/24", i)))
	}
	body, err := yaml.YAMLToJSON([]byte(ts.meshYAML("load", "10.192", "10.193", entries.String())))
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's client neither throttles itself nor retries: every
	// answer is seen as the server gave it.
	cfg := ts.env.RESTConfig(framework.HostCluster, framework.UserAdmin)
	cfg.QPS, cfg.Burst = -1, 0
	attacker, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	innocentNS := ts.namespace(t, "admission-innocent")
	fm := ts.servingMember(t, framework.FakeContent{Nodes: 3})
	kc, err := fm.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	ts.putSecret(t, innocentNS, "far", kc)
	innocent := func(round string) []time.Duration {
		var took []time.Duration
		for i := range innocentCreates {
			name := fmt.Sprintf("%s-%d", round, i)
			start := time.Now()
			ts.create(t, innocentNS, ts.meshYAML(name, "10.196", "10.197", entryYAML("far", "far", "10.198.0.0/16", "10.199.0.0/16")))
			took = append(took, time.Since(start))
			ts.delete(t, innocentNS, name)
		}
		return took
	}
	quiet := innocent("quiet")

	ctx, cancel := context.WithTimeout(context.Background(), admissionAttackFor)
	defer cancel()
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		bad   []string
		wg    sync.WaitGroup
	)
	for range admissionAttackLoops {
		wg.Go(func() {
			for ctx.Err() == nil {
				var code int
				res := attacker.CoreV1().RESTClient().Post().MaxRetries(0).
					AbsPath("/apis", framework.MeshGroup, framework.MeshVersion, "namespaces", attackerNS, "clustermeshes").
					Param("dryRun", "All").SetHeader("Content-Type", "application/json").Body(body).Do(ctx).StatusCode(&code)
				if ctx.Err() != nil {
					return
				}
				raw, _ := res.Raw()
				mu.Lock()
				codes[code]++
				switch {
				case code >= 500, strings.Contains(string(raw), "rate limiter"), code == 0:
					bad = append(bad, fmt.Sprintf("%d %.300s (%v)", code, raw, res.Error()))
				case code == http.StatusTooManyRequests && !hasRetryAfter(res.Error()):
					bad = append(bad, fmt.Sprintf("429 without Retry-After: %.300s", raw))
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(2 * time.Second) // the attack under way
	attacked := innocent("attacked")
	cancel()
	wg.Wait()

	t.Logf("the innocent tenant's creates took %v quiet, %v under attack; the attacker's %d loops got %v (HTTP code: count)",
		rounded(quiet), rounded(attacked), admissionAttackLoops, codes)
	if len(bad) > 0 {
		t.Errorf("%d of the attacker's answers were failures, not answers or 429: %s", len(bad), strings.Join(bad[:min(3, len(bad))], "; "))
	}
	if codes[http.StatusCreated]+codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("the attack had no effect to measure: %v", codes)
	}
}

// hasRetryAfter: a 429 says when to come back.
func hasRetryAfter(err error) bool {
	_, ok := apierrors.SuggestsClientDelay(err)
	return ok
}

func rounded(ds []time.Duration) []time.Duration {
	out := slices.Clone(ds)
	for i := range out {
		out[i] = out[i].Round(10 * time.Millisecond)
	}
	return out
}
