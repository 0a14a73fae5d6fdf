package planner

import (
	"fmt"
	"time"
)

// CredentialRenewWithin is how long before a member cluster's credential
// expires the plan starts to warn: time enough to notice, in a plan, a
// status condition or an event, and renew it with `kubectl mesh join
// --refresh`, which renews credentials this close to their expiry too.
const CredentialRenewWithin = 30 * 24 * time.Hour

// checkCredential warns when the credential of cluster expires within
// CredentialRenewWithin of the plan's time, or has expired. The message
// holds the expiry, never a countdown, so that the status condition built
// from it changes when the credential does, not every day.
func (pl *planner) checkCredential(cluster string, expiry time.Time) {
	if reason, message := credentialWarning(pl.in, cluster, expiry, pl.in.Now); reason != "" {
		pl.issues.warning(reason, cluster, "", message, "")
	}
}

// credentialWarning is checkCredential's warning at now, "" for none:
// incremental planning compares it at two times.
func credentialWarning(in *Input, cluster string, expiry, now time.Time) (reason, message string) {
	if expiry.IsZero() || expiry.Sub(now) > CredentialRenewWithin {
		return "", ""
	}
	reason, verb := WarningCredentialExpiring, "expires"
	if !expiry.After(now) {
		reason, verb = WarningCredentialExpired, "expired"
	}
	return reason, fmt.Sprintf(
		"the credential in the kubeconfig Secret of cluster %s %s at %s; renew it with "+
			"`kubectl mesh join %s -n %s --name %s --member-kubeconfig <kubeconfig of the member cluster> --refresh`",
		cluster, verb, expiry.UTC().Format(time.RFC3339), in.MeshName, in.MeshNamespace, cluster)
}
