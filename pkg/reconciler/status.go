package reconciler

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
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
	if in.plan == nil {
		// Nothing new is known of the clusters without a plan.
		st.Clusters = slices.Clone(old.Clusters)
	} else {
		names := make([]string, 0, len(in.mesh.Spec.Clusters))
		for _, c := range in.mesh.Spec.Clusters {
			names = append(names, c.Name)
		}
		slices.Sort(names)
		for _, name := range names {
			st.Clusters = append(st.Clusters, clusterStatus(name, in.plan, in.outcomes[name], findClusterStatus(old.Clusters, name)))
		}
	}
	setConditions(&st, in)
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

// summarize joins the first n items and counts the rest, so that a message
// stays readable however many clusters or Peers are involved.
func summarize(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}
