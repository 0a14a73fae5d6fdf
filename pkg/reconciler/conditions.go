package reconciler

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// setConditions sets every condition of a pass's status from its figures,
// the plan and the departures; this file holds each of them.
func setConditions(st *meshv1alpha1.ClusterMeshStatus, in statusInput) {
	gen := in.mesh.Generation
	setDeparturesCondition(st, gen, in.now)
	if in.plan == nil {
		setPlanFailed(st, in)
		return
	}
	reachable := setReachable(st, in)
	appliedOK := setApplied(st, in, reachable)
	setNetworksValid(st, in)
	setCarried(st, gen, in.now, in.plan)
	setReady(st, in, reachable && appliedOK)
	setCredentialsCondition(st, in)
	setGranted(st, gen, in.plan)
	setServicesExclusive(st, gen, in.now, in.mesh, in.plan, in.servicesRemoving)
}

// setPlanFailed says on every condition the plan decides that it failed.
func setPlanFailed(st *meshv1alpha1.ClusterMeshStatus, in statusInput) {
	msg := "the plan could not be computed"
	if in.planErr != nil {
		msg = in.planErr.Error()
	}
	gen := in.mesh.Generation
	setCondition(st, gen, in.now, meshv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonPlanFailed, msg)
	for _, typ := range []string{meshv1alpha1.ConditionPeersApplied, meshv1alpha1.ConditionPeersCarried, meshv1alpha1.ConditionNetworksValid,
		meshv1alpha1.ConditionClustersReachable, meshv1alpha1.ConditionCredentialsValid, meshv1alpha1.ConditionGranted} {
		setCondition(st, gen, in.now, typ, metav1.ConditionUnknown, ReasonPlanFailed, msg)
	}
	if in.servicesRemoving != "" {
		// The removal ran without a plan; its record must not be lost.
		setServicesExclusive(st, gen, in.now, in.mesh, nil, in.servicesRemoving)
	} else {
		setCondition(st, gen, in.now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionUnknown, ReasonPlanFailed, msg)
	}
}

// setReachable sets ClustersReachable and reports whether every cluster answers.
func setReachable(st *meshv1alpha1.ClusterMeshStatus, in statusInput) bool {
	var unreachable []string
	for _, cs := range st.Clusters {
		if !cs.Reachable {
			unreachable = append(unreachable, fmt.Sprintf("%s (%s)", cs.Name, cs.LastError))
		}
	}
	if len(unreachable) == 0 {
		setCondition(st, in.mesh.Generation, in.now, meshv1alpha1.ConditionClustersReachable, metav1.ConditionTrue, ReasonAllReachable,
			fmt.Sprintf("all %d member clusters answer", len(st.Clusters)))
		return true
	}
	kept := "the Peers representing them elsewhere are kept as they are"
	if in.mesh.Spec.MultiClusterServices == meshv1alpha1.MultiClusterServicesEnabled {
		kept += ", and so are their exported services' endpoints where imported"
	}
	setCondition(st, in.mesh.Generation, in.now, meshv1alpha1.ConditionClustersReachable, metav1.ConditionFalse, ReasonUnreachable,
		"unreachable: "+strings.Join(unreachable, "; ")+"; "+kept)
	return false
}

// setApplied sets PeersApplied from the reachable clusters' figures and
// reports whether every desired Peer exists as planned.
func setApplied(st *meshv1alpha1.ClusterMeshStatus, in statusInput, reachable bool) bool {
	gen, now := in.mesh.Generation, in.now
	var failed, short []string
	var desired, applied int32
	for _, cs := range st.Clusters {
		if !cs.Reachable {
			continue
		}
		desired += cs.PeersDesired
		applied += cs.PeersApplied
		switch {
		case len(in.outcomes[cs.Name].errors) > 0:
			failed = append(failed, fmt.Sprintf("%s: %s", cs.Name, cs.LastError))
		case cs.PeersApplied < cs.PeersDesired:
			short = append(short, fmt.Sprintf("%s (%d of %d)", cs.Name, cs.PeersApplied, cs.PeersDesired))
		}
	}
	switch {
	case len(failed) > 0:
		setCondition(st, gen, now, meshv1alpha1.ConditionPeersApplied, metav1.ConditionFalse, ReasonApplyFailed,
			"writing Peers failed on "+strings.Join(failed, "; "))
	case len(short) > 0:
		setCondition(st, gen, now, meshv1alpha1.ConditionPeersApplied, metav1.ConditionFalse, ReasonApplyFailed,
			"not every desired Peer exists as planned on "+strings.Join(short, ", "))
	case !reachable:
		setCondition(st, gen, now, meshv1alpha1.ConditionPeersApplied, metav1.ConditionUnknown, ReasonTargetsUnreachable,
			fmt.Sprintf("%d Peers applied on the reachable clusters; the Peers of unreachable clusters cannot be checked", applied))
	default:
		setCondition(st, gen, now, meshv1alpha1.ConditionPeersApplied, metav1.ConditionTrue, ReasonApplied,
			fmt.Sprintf("all %d desired Peers exist as planned", desired))
		return true
	}
	return false
}

// setNetworksValid sets NetworksValid from the plan's network conflicts.
func setNetworksValid(st *meshv1alpha1.ClusterMeshStatus, in statusInput) {
	var netIssues []string
	for _, c := range in.plan.View.Conflicts {
		// Which conflicts are about networks is the planner's to say, beside
		// where it defines them.
		if planner.IsNetworkConflict(c.Reason) {
			netIssues = append(netIssues, issueText(c))
		}
	}
	if len(netIssues) == 0 {
		setCondition(st, in.mesh.Generation, in.now, meshv1alpha1.ConditionNetworksValid, metav1.ConditionTrue, ReasonValid,
			"no network of the mesh conflicts with another")
		return
	}
	setCondition(st, in.mesh.Generation, in.now, meshv1alpha1.ConditionNetworksValid, metav1.ConditionFalse, ReasonNetworkConflicts,
		summarize(netIssues, 5)+"; see the plan view for details")
}

// setReady sets Ready: every cluster answers and holds its Peers
// (healthy), something is carried in every direction, every pair has a
// path (a relay where needed), and no cluster's services are yielded to
// another mesh; else why not.
func setReady(st *meshv1alpha1.ClusterMeshStatus, in statusInput, healthy bool) {
	gen, now := in.mesh.Generation, in.now
	uncarried := in.plan.Uncarried(localName(in.mesh))
	noPath := in.plan.NoPath()
	yielded := len(in.plan.ServicesYielded) > 0
	if healthy && len(uncarried) == 0 && !yielded && len(noPath) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonReady,
			"every member cluster is reachable, holds the Peers the plan shows, and carries something of every other")
		return
	}
	var why []string
	for _, t := range []string{meshv1alpha1.ConditionClustersReachable, meshv1alpha1.ConditionPeersApplied} {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil && c.Status != metav1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s is %s (%s)", t, c.Status, c.Reason))
		}
	}
	reason := ReasonNotReady
	switch {
	case len(why) == 0 && len(uncarried) > 0 && !yielded && len(noPath) == 0:
		reason = ReasonNothingCarried
	case len(why) == 0 && len(uncarried) == 0 && yielded && len(noPath) == 0:
		reason = planner.WarningServicesClusterShared
	case len(why) == 0 && len(uncarried) == 0 && !yielded && len(noPath) > 0:
		reason = planner.ConflictNoRelay
	}
	if len(noPath) > 0 {
		why = append(why, noPathText(in.plan, noPath))
	}
	if len(uncarried) > 0 {
		var dirs []string
		for _, u := range uncarried {
			dirs = append(dirs, u.Source+" -> "+u.Target)
		}
		why = append(why, fmt.Sprintf("nothing is carried %s because of conflicts or invalid networks (see %s and %s)",
			summarize(dirs, 5), meshv1alpha1.ConditionPeersCarried, meshv1alpha1.ConditionNetworksValid))
	}
	if yielded {
		why = append(why, yieldedText(in.plan))
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionReady, metav1.ConditionFalse, reason, strings.Join(why, "; "))
}

// setCarried says whether conflicts keep groups or Peers out of the mesh:
// which, how many of each reason, and why. The conflicts of host access
// are the Granted condition's to tell.
func setCarried(st *meshv1alpha1.ClusterMeshStatus, gen int64, now metav1.Time, plan *planner.Plan) {
	var texts []string
	counts := map[string]int{}
	var reasons []string
	for _, c := range plan.View.Conflicts {
		if c.Reason == planner.ConflictHostAccessDenied || c.Reason == planner.ConflictOutsideHostAccess {
			continue
		}
		if counts[c.Reason] == 0 {
			reasons = append(reasons, c.Reason)
		}
		counts[c.Reason]++
		texts = append(texts, issueText(c))
	}
	if len(texts) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionPeersCarried, metav1.ConditionTrue, ReasonAllCarried,
			"no conflict keeps a group or Peer out of the mesh")
		return
	}
	slices.Sort(reasons)
	var byReason []string
	for _, r := range reasons {
		byReason = append(byReason, fmt.Sprintf("%s %d", r, counts[r]))
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionPeersCarried, metav1.ConditionFalse, ReasonConflictsBlock,
		fmt.Sprintf("%d conflicts keep groups or Peers out of the mesh (%s): %s; see the plan view for details",
			len(texts), strings.Join(byReason, ", "), summarize(texts, 5)))
}

// setCondition sets one condition; its transition time only moves when its
// status does, which is what makes an unchanged status compare equal.
func setCondition(st *meshv1alpha1.ClusterMeshStatus, gen int64, now metav1.Time, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: gen,
		LastTransitionTime: now,
		Reason:             reason,
		Message:            msg,
	})
}

// setGranted repeats the plan's host access as the Granted condition. Its
// transition time is the plan's: the upgrade grace period of a mesh stored
// before grants existed runs from it, across restarts.
func setGranted(st *meshv1alpha1.ClusterMeshStatus, gen int64, plan *planner.Plan) {
	ha := plan.View.HostAccess
	if ha == nil {
		return
	}
	status := metav1.ConditionFalse
	if ha.Granted {
		status = metav1.ConditionTrue
	}
	setCondition(st, gen, plan.View.GeneratedAt, meshv1alpha1.ConditionGranted, status, ha.Reason, ha.Message)
}

// Reasons of a True ServicesExclusive condition. A False one carries the
// plan's warning reason, planner.WarningServicesClusterShared, as its
// events do.
const (
	ReasonServicesExclusive = "Exclusive"
	ReasonServicesDisabled  = "ServicesDisabled"
)

// setServicesExclusive says whether another mesh with multi-cluster
// services shares a member cluster of this one: the plan's
// ServicesClusterShared warnings, which name this mesh's entries only.
func setServicesExclusive(st *meshv1alpha1.ClusterMeshStatus, gen int64, now metav1.Time, mesh *meshv1alpha1.ClusterMesh, plan *planner.Plan, removing string) {
	if mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled && removing != "" {
		// Kept until every member is confirmed clean: it marks, across
		// restarts, that the mesh's imports may remain (servicesMayRemain).
		setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionTrue, ReasonServicesRemoving, removing)
		return
	}
	if mesh.Spec.MultiClusterServices != meshv1alpha1.MultiClusterServicesEnabled {
		setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionTrue, ReasonServicesDisabled,
			"the mesh does not carry multi-cluster services")
		return
	}
	var shared []string
	for _, w := range sharedWarnings(plan) {
		shared = append(shared, issueText(w))
	}
	if len(shared) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionTrue, ReasonServicesExclusive,
			"no other ClusterMesh with multiClusterServices Enabled has verified a member cluster of this one")
		return
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionFalse, planner.WarningServicesClusterShared,
		summarize(shared, 5))
}

// yieldedText is why a mesh that shares clusters with an earlier services
// mesh is not Ready: it holds them against the one-ClusterSet rule.
func yieldedText(plan *planner.Plan) string {
	return fmt.Sprintf("%s is False (%s): another ClusterMesh with multiClusterServices Enabled, created earlier, has verified %s too",
		meshv1alpha1.ConditionServicesExclusive, planner.WarningServicesClusterShared, strings.Join(plan.ServicesYielded, ", "))
}

// noPathText names the pairs of clusters behind NAT that nothing relays
// between, and why, for the Ready condition.
func noPathText(plan *planner.Plan, pairs []planner.Uncarried) string {
	names := make([]string, 0, len(pairs))
	for _, p := range pairs {
		names = append(names, p.Source+" and "+p.Target)
	}
	why := ""
	if r := plan.View.Relay; r != nil {
		why = ": " + r.Message
	}
	return fmt.Sprintf("clusters behind NAT with no path between them (%s): %s%s; see the plan view's relay and paths",
		planner.ConflictNoRelay, summarize(names, 5), why)
}

// setCredentialsCondition sets CredentialsValid: False while a member
// cluster's credential expires within planner.CredentialRenewWithin or has
// expired, naming the clusters, the expiry and the command that renews it.
// It does not touch Ready: the mesh works until the credential expires, and
// an expired one shows there as an unreachable cluster. The messages hold
// expiry times, not countdowns, so the status is not rewritten every day.
func setCredentialsCondition(st *meshv1alpha1.ClusterMeshStatus, in statusInput) {
	gen, now := in.mesh.Generation, in.now
	expiring, expired := credentialWarnings(in.plan)
	if len(expiring)+len(expired) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionCredentialsValid, metav1.ConditionTrue, ReasonValid,
			fmt.Sprintf("no member cluster's credential expires within %d days", int(planner.CredentialRenewWithin.Hours()/24)))
		return
	}
	reason := ReasonCredentialsExpire
	if len(expired) > 0 {
		reason = ReasonCredentialsExpired
	}
	var items []string
	for _, w := range append(expired, expiring...) {
		items = append(items, issueText(w))
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionCredentialsValid, metav1.ConditionFalse, reason, summarize(items, 3))
}

// setDeparturesCondition summarises the departures of st.
func setDeparturesCondition(st *meshv1alpha1.ClusterMeshStatus, gen int64, now metav1.Time) {
	if len(st.DepartedClusters) == 0 {
		setCondition(st, gen, now, meshv1alpha1.ConditionDeparturesComplete, metav1.ConditionTrue, ReasonDeparturesComplete,
			"no cluster that left the mesh holds anything of it")
		return
	}
	reason := meshv1alpha1.DepartureRemoving
	var parts []string
	for _, it := range st.DepartedClusters {
		if it.Reason != meshv1alpha1.DepartureRemoving && reason == meshv1alpha1.DepartureRemoving {
			reason = it.Reason
		}
		parts = append(parts, fmt.Sprintf("%s: %s", it.Name, it.Reason))
	}
	setCondition(st, gen, now, meshv1alpha1.ConditionDeparturesComplete, metav1.ConditionFalse, reason,
		"clusters that left the mesh: "+summarize(parts, 5)+"; see status.departedClusters")
}

// localName is the name of the mesh's local cluster, "" when it has none.
func localName(mesh *meshv1alpha1.ClusterMesh) string {
	for _, c := range mesh.Spec.Clusters {
		if c.Local {
			return c.Name
		}
	}
	return ""
}

func issueText(i meshv1alpha1.PlanIssue) string {
	where := i.Cluster
	if i.Target != "" {
		where += " -> " + i.Target
	}
	if where == "" {
		return fmt.Sprintf("%s: %s", i.Reason, i.Message)
	}
	return fmt.Sprintf("%s (%s): %s", i.Reason, where, i.Message)
}

func sharedWarnings(plan *planner.Plan) []meshv1alpha1.PlanIssue {
	var out []meshv1alpha1.PlanIssue
	for _, w := range plan.View.Warnings {
		if w.Reason == planner.WarningServicesClusterShared {
			out = append(out, w)
		}
	}
	return out
}

// credentialWarnings are the plan's warnings about member credentials that
// expire soon or have expired. The planner decides which (it compares the
// expiry with the plan's time); status and events only report them.
func credentialWarnings(plan *planner.Plan) (expiring, expired []meshv1alpha1.PlanIssue) {
	for _, w := range plan.View.Warnings {
		switch w.Reason {
		case planner.WarningCredentialExpiring:
			expiring = append(expiring, w)
		case planner.WarningCredentialExpired:
			expired = append(expired, w)
		}
	}
	return expiring, expired
}
