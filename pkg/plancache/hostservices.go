package plancache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/clock"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/grants"
)

// Defaults of how long and how many answers of the host services access are kept.
const (
	DefaultHostServicesTTL        = time.Minute
	DefaultMaxHostServicesAnswers = 10_000
	// failedReviewTTL: an authorizer that fails is asked again soon, not
	// on every computation.
	failedReviewTTL = 5 * time.Second
)

// hostServiceRights are what the server does in a namespace of the local
// cluster for a mesh's services, with its own identity: the author must be
// allowed each by hand, or a grant must name the namespace.
var hostServiceRights = func() []authorizer.AttributesRecord {
	var out []authorizer.AttributesRecord
	add := func(group, resource, subresource string, verbs ...string) {
		for _, v := range verbs {
			out = append(out, authorizer.AttributesRecord{Verb: v, APIGroup: group, Resource: resource, Subresource: subresource, ResourceRequest: true})
		}
	}
	add(mcsv1beta1.GroupName, mcsv1beta1.ServiceImportPluralName, "", "create", "get", "update", "delete")
	add("", "services", "", "create", "get", "update", "delete")
	add("discovery.k8s.io", "endpointslices", "", "create", "update", "delete", "get", "list")
	add(mcsv1beta1.GroupName, mcsv1beta1.ServiceExportPluralName, "status", "update")
	return out
}()

// hostServices decides which namespaces of the local cluster a mesh may
// export from and import into: those a grant covering the mesh's namespace
// names in serviceNamespaces, and those where the mesh's recorded author
// holds every right of hostServiceRights, asked by SubjectAccessReviews
// whose answers are kept for ttl, at most max of them.
type hostServices struct {
	authz  authorizer.Authorizer // nil: no review allows anything
	grants Grants
	clock  clock.PassiveClock
	ttl    time.Duration
	max    int

	mu      sync.Mutex
	answers map[answerKey]answer
}

type answerKey struct{ author, namespace string }

type answer struct {
	missing string // the first right refused, empty when all are allowed
	failed  bool   // the review failed: a refusal, kept a short while
	expires time.Time
}

// notGranted maps each namespace the mesh may not use to why, and says
// until when the answer holds (zero: until the grants or exports change).
// It fails while the grants are not read: denying then would remove what
// the mesh wrote under a grant.
func (h *hostServices) notGranted(mesh *meshv1alpha1.ClusterMesh, namespaces []string) (map[string]string, time.Time, error) {
	now := h.clock.Now()
	var until time.Time
	if len(namespaces) == 0 {
		return nil, until, nil
	}
	cov, err := h.grants.Coverage(mesh.Namespace)
	if err != nil {
		return nil, now, fmt.Errorf("reading the grants of namespace %s: %w", mesh.Namespace, err)
	}
	author, recorded := grants.AuthorOf(mesh)
	out := map[string]string{}
	for _, ns := range namespaces {
		if slices.Contains(cov.ServiceNamespaces, ns) {
			continue
		}
		if !recorded {
			out[ns] = "no ClusterMeshGrant names it in serviceNamespaces, and the mesh records no author whose rights could allow it (a spec write records one)"
			continue
		}
		a := h.answer(author, ns, now)
		if until.IsZero() || a.expires.Before(until) {
			until = a.expires
		}
		if a.missing != "" {
			out[ns] = fmt.Sprintf("no ClusterMeshGrant names it in serviceNamespaces, and the mesh's author may not %s there by hand", a.missing)
		}
	}
	return out, until, nil
}

// answer is the author's rights in namespace, reviewed again once expired.
// A failed review counts as a refusal, asked again after failedReviewTTL.
func (h *hostServices) answer(author grants.Author, namespace string, now time.Time) answer {
	key := answerKey{author: authorKey(author), namespace: namespace}
	h.mu.Lock()
	a, ok := h.answers[key]
	h.mu.Unlock()
	if ok && now.Before(a.expires) {
		return a
	}
	a = h.review(author, namespace)
	a.expires = now.Add(h.ttl)
	if a.failed {
		a.expires = now.Add(min(h.ttl, failedReviewTTL))
	}
	h.keep(key, a, now)
	return a
}

func (h *hostServices) review(author grants.Author, namespace string) answer {
	if h.authz == nil {
		return answer{missing: "be judged (no authorizer)", failed: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := author.User()
	for _, r := range hostServiceRights {
		r.User, r.Namespace = u, namespace
		decision, _, err := h.authz.Authorize(ctx, r)
		what := fmt.Sprintf("%s %s", r.Verb, r.Resource)
		if r.Subresource != "" {
			what += "/" + r.Subresource
		}
		switch {
		case err != nil:
			return answer{missing: what + " (the review failed)", failed: true}
		case decision != authorizer.DecisionAllow:
			return answer{missing: what}
		}
	}
	return answer{}
}

// keep stores an answer, making room by dropping expired answers, then any.
func (h *hostServices) keep(key answerKey, a answer, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.answers == nil {
		h.answers = map[answerKey]answer{}
	}
	if _, ok := h.answers[key]; !ok && len(h.answers) >= h.max {
		for k, old := range h.answers {
			if !now.Before(old.expires) {
				delete(h.answers, k)
			}
		}
		for k := range h.answers {
			if len(h.answers) < h.max {
				break
			}
			delete(h.answers, k)
		}
	}
	h.answers[key] = a
}

// authorKey tells authors apart by everything the authorizer is given.
func authorKey(a grants.Author) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %q", a.Name, a.UID, a.Groups)
	for _, k := range slices.Sorted(maps.Keys(a.Extra)) {
		fmt.Fprintf(&b, " %q=%q", k, a.Extra[k])
	}
	return b.String()
}
