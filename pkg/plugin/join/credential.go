package join

import (
	"bytes"
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/member"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// DefaultTokenValidity is the validity join asks for a new token.
const DefaultTokenValidity = 365 * 24 * time.Hour

// reuseVerdict says whether the credential a Secret holds can stay.
type reuseVerdict struct {
	reuse  bool
	reason string
}

// judgeExisting decides from what the Secret holds alone whether its
// credential can stay: only a token for the same server and CA, valid for
// more than planner.CredentialRenewWithin (the plan warns from then on).
// The member cluster still has to confirm that the token is the member
// identity's (verifyToken) before it is kept.
func judgeExisting(data []byte, want Target, now time.Time, refresh bool) (reuseVerdict, existingCredential) {
	switch {
	case refresh:
		return reuseVerdict{reason: "--refresh asks for a new token"}, existingCredential{}
	case len(data) == 0:
		return reuseVerdict{reason: "no credential yet"}, existingCredential{}
	}
	have, err := parseExisting(data)
	if err != nil {
		return reuseVerdict{reason: "the Secret's kubeconfig is not one join wrote: " + err.Error()}, existingCredential{}
	}
	same, err := sameTarget(have.target, want)
	if err != nil {
		return reuseVerdict{reason: err.Error()}, existingCredential{}
	}
	if !same {
		return reuseVerdict{reason: "the Secret's kubeconfig names another server or CA"}, existingCredential{}
	}
	exp := have.expiry
	if left := exp.Sub(now); left <= planner.CredentialRenewWithin {
		return reuseVerdict{reason: fmt.Sprintf("the token expires %s, within %d days", exp.UTC().Format(time.RFC3339), int(planner.CredentialRenewWithin.Hours()/24))}, existingCredential{}
	}
	return reuseVerdict{reuse: true, reason: fmt.Sprintf("the token in the Secret is valid until %s", exp.UTC().Format(time.RFC3339))}, have
}

// sameTarget compares two targets as the mesh server sees them: normalized
// by its own kubeconfig rules.
func sameTarget(a, b Target) (bool, error) {
	const probe = "probe"
	na, err := normalized(a, probe)
	if err != nil {
		return false, err
	}
	nb, err := normalized(b, probe)
	if err != nil {
		return false, err
	}
	return na.Host == nb.Host && na.ServerName == nb.ServerName && bytes.Equal(na.CAData, nb.CAData), nil
}

func normalized(t Target, token string) (*rest.Config, error) {
	data, err := BuildKubeconfig("member", t, token)
	if err != nil {
		return nil, err
	}
	return memberaccess.ParseKubeconfig(data, false)
}

// verifyToken asks the member cluster whom token authenticates as: a token
// of a ServiceAccount deleted and recreated since, or revoked, fails here
// although its claims look fine. base is the caller's configuration of the
// member; only its server and TLS settings are used.
func verifyToken(ctx context.Context, base *rest.Config, token string) error {
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = token
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("the member cluster does not accept the token in the Secret: %w", err)
	}
	if got := review.Status.UserInfo.Username; got != member.Username() {
		return fmt.Errorf("the token in the Secret authenticates as %q, not as the member identity", got)
	}
	return nil
}
