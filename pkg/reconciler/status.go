package reconciler

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/planner"
)

// Condition reasons. They are stable identifiers clients may match on.
const (
	ReasonReady              = "Ready"
	ReasonNotReady           = "NotReady"
	ReasonPlanFailed         = "PlanFailed"
	ReasonAllReachable       = "AllReachable"
	ReasonUnreachable        = "ClustersUnreachable"
	ReasonApplied            = "Applied"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonTargetsUnreachable = "TargetsUnreachable"
	ReasonValid              = "Valid"
	ReasonNetworkConflicts   = "NetworkConflicts"
	ReasonRemovalBlocked     = "WaitingForUnreachableClusters"
	ReasonRemovalFailed      = "PeerRemovalFailed"
	ReasonCredentialsExpire  = "CredentialsExpiring"
	ReasonCredentialsExpired = "CredentialsExpired"
	ReasonAllCarried         = "AllCarried"
	ReasonConflictsBlock     = "ConflictsKeepPeersOut"
	ReasonNothingCarried     = "NothingCarried"
)

// targetOutcome is what one pass did on one target cluster.
type targetOutcome struct {
	// reconciled is false when the target was unreachable and left alone;
	// applied is then unknown.
	reconciled bool
	// applied counts the desired Peers that exist exactly as planned after
	// the pass: unchanged, kept, or written successfully.
	applied int32
	// errors are the failed writes, one line each, without secrets.
	errors []string
}

// statusInput is everything a mesh's status is computed from.
type statusInput struct {
	mesh *meshv1alpha1.ClusterMesh
	// plan is nil when planning failed with planErr.
	plan     *planner.Plan
	planErr  error
	outcomes map[string]targetOutcome
	// departed are the departures not done (settleDepartures).
	departed []meshv1alpha1.DepartedCluster
	// servicesRemoving: services are not Enabled and these clusters may
	// still hold the mesh's services objects (removeServices).
	servicesRemoving string
	now              metav1.Time
}

// buildStatus computes the status a reconcile pass reports. Figures of an
// unreachable cluster are carried over from the previous status: nothing new
// is known about it, and rewriting them as zero would only churn.
func buildStatus(in statusInput) meshv1alpha1.ClusterMeshStatus {
	old := &in.mesh.Status
	st := meshv1alpha1.ClusterMeshStatus{
		ObservedGeneration: in.mesh.Generation,
		Conditions:         slices.Clone(old.Conditions),
		DepartedClusters:   in.departed,
	}
	setDeparturesCondition(&st, in.mesh.Generation, in.now)
	if in.plan == nil {
		msg := "the plan could not be computed"
		if in.planErr != nil {
			msg = in.planErr.Error()
		}
		st.Clusters = slices.Clone(old.Clusters)
		gen := in.mesh.Generation
		setCondition(&st, gen, in.now, meshv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonPlanFailed, msg)
		setCondition(&st, gen, in.now, meshv1alpha1.ConditionPeersApplied, metav1.ConditionUnknown, ReasonPlanFailed, msg)
		setCondition(&st, gen, in.now, meshv1alpha1.ConditionPeersCarried, metav1.ConditionUnknown, ReasonPlanFailed, msg)
		setCondition(&st, gen, in.now, meshv1alpha1.ConditionNetworksValid, metav1.ConditionUnknown, ReasonPlanFailed, msg)
		setCondition(&st, gen, in.now, meshv1alpha1.ConditionClustersReachable, metav1.ConditionUnknown, ReasonPlanFailed, msg)
		setCondition(&st, gen, in.now, meshv1alpha1.ConditionCredentialsValid, metav1.ConditionUnknown, ReasonPlanFailed, msg)
		setCondition(&st, gen, in.now, meshv1alpha1.ConditionGranted, metav1.ConditionUnknown, ReasonPlanFailed, msg)
		if in.servicesRemoving != "" {
			// The removal ran without a plan; its record must not be lost.
			setServicesExclusive(&st, gen, in.now, in.mesh, nil, in.servicesRemoving)
		} else {
			setCondition(&st, gen, in.now, meshv1alpha1.ConditionServicesExclusive, metav1.ConditionUnknown, ReasonPlanFailed, msg)
		}
		return st
	}

	names := make([]string, 0, len(in.mesh.Spec.Clusters))
	for _, c := range in.mesh.Spec.Clusters {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	for _, name := range names {
		st.Clusters = append(st.Clusters, clusterStatus(name, in.plan, in.outcomes[name], findClusterStatus(old.Clusters, name)))
	}
	setConditions(&st, in)
	setCredentialsCondition(&st, in)
	setGranted(&st, in.mesh.Generation, in.plan)
	setServicesExclusive(&st, in.mesh.Generation, in.now, in.mesh, in.plan, in.servicesRemoving)
	return st
}

// clusterStatus computes the figures of one member cluster.
func clusterStatus(name string, plan *planner.Plan, out targetOutcome, prev *meshv1alpha1.ClusterStatus) meshv1alpha1.ClusterStatus {
	cs := meshv1alpha1.ClusterStatus{Name: name}
	cp, _ := plan.Cluster(name)
	tp, _ := plan.Target(name)
	if tp != nil {
		cs.PeersDesired = tp.DesiredPeers
	}
	if cp == nil || !cp.Reachable {
		if prev != nil {
			cs = *prev.DeepCopy()
			cs.PeersDesired = 0
			if tp != nil {
				cs.PeersDesired = tp.DesiredPeers
			}
		}
		cs.Reachable = false
		cs.LastError = "the cluster could not be read"
		if cp != nil && cp.Error != "" {
			cs.LastError = cp.Error
		}
		return cs
	}
	cs.Reachable = true
	cs.Granularity = cp.Granularity
	cs.Nodes = cp.Summary.Nodes
	cs.ReadyNodes = cp.Summary.KiloReadyNodes
	cs.Locations = cp.Summary.Groups
	for _, r := range cp.Summary.SkippedByReason {
		cs.SkippedNodes += r.Count
	}
	cs.SkippedByReason = slices.Clone(cp.Summary.SkippedByReason)
	if out.reconciled {
		cs.PeersApplied = out.applied
	} else if prev != nil {
		cs.PeersApplied = prev.PeersApplied
	}
	if len(out.errors) > 0 {
		cs.LastError = summarize(out.errors, 3)
	}
	return cs
}

func findClusterStatus(list []meshv1alpha1.ClusterStatus, name string) *meshv1alpha1.ClusterStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// setConditions derives the four conditions from the per-cluster figures
// and the plan's conflicts.
func setConditions(st *meshv1alpha1.ClusterMeshStatus, in statusInput) {
	reachable := setReachable(st, in)
	appliedOK := setApplied(st, in, reachable)
	setNetworksValid(st, in)
	setCarried(st, in.mesh.Generation, in.now, in.plan)
	setReady(st, in, reachable && appliedOK)
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

// localName is the name of the mesh's local cluster, "" when it has none.
func localName(mesh *meshv1alpha1.ClusterMesh) string {
	for _, c := range mesh.Spec.Clusters {
		if c.Local {
			return c.Name
		}
	}
	return ""
}

// deletionStatus is the status of a deleted mesh whose Peers are being
// removed: Ready says what the deletion waits for.
func deletionStatus(mesh *meshv1alpha1.ClusterMesh, reason, message string, now metav1.Time) meshv1alpha1.ClusterMeshStatus {
	st := *mesh.Status.DeepCopy()
	st.ObservedGeneration = mesh.Generation
	setCondition(&st, mesh.Generation, now, meshv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	return st
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

// statusChanged reports whether writing want would change what is stored.
// Condition order is ignored; transition times are compared only where
// setCondition moved them, that is where the status changed.
func statusChanged(have, want *meshv1alpha1.ClusterMeshStatus) bool {
	h, w := have.DeepCopy(), want.DeepCopy()
	for _, s := range []*meshv1alpha1.ClusterMeshStatus{h, w} {
		slices.SortFunc(s.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
		for i := range s.Conditions {
			// The API round trip keeps seconds only.
			s.Conditions[i].LastTransitionTime = metav1.NewTime(s.Conditions[i].LastTransitionTime.Rfc3339Copy().Time)
		}
	}
	return !equality.Semantic.DeepEqual(h, w)
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

// summarize joins the first n items and counts the rest, so that a message
// stays readable however many clusters or Peers are involved.
func summarize(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}
