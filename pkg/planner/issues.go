package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// maxIssueExamples bounds how many items one aggregated issue names: a
// misdeclared network can drop thousands of CIDRs, and the plan must stay
// readable.
const maxIssueExamples = 5

type issueKey struct {
	warning                 bool
	reason, cluster, target string
}

type issueGroup struct {
	lead  string
	items []string
}

// issues collects conflicts and warnings. Items of the same reason, cluster
// and target merge into one issue naming the first few, so the plan's size
// does not grow with the number of nodes.
type issues struct {
	groups map[issueKey]*issueGroup
}

func newIssues() *issues { return &issues{groups: map[issueKey]*issueGroup{}} }

// conflict records that item is kept out of the mesh; lead summarises all
// items of the same reason, cluster and target.
func (s *issues) conflict(reason, cluster, target, lead, item string) {
	s.add(issueKey{false, reason, cluster, target}, lead, item)
}

// warning records a problem that leaves the plan as it is.
func (s *issues) warning(reason, cluster, target, lead, item string) {
	s.add(issueKey{true, reason, cluster, target}, lead, item)
}

// addIssue records a ready-made issue.
func (s *issues) addIssue(warning bool, i meshv1alpha1.PlanIssue) {
	s.add(issueKey{warning, i.Reason, i.Cluster, i.Target}, i.Message, "")
}

func (s *issues) add(k issueKey, lead, item string) {
	g := s.groups[k]
	if g == nil {
		g = &issueGroup{lead: lead}
		s.groups[k] = g
	}
	if item != "" {
		g.items = append(g.items, item)
	}
}

// lists renders the conflicts and the warnings, sorted.
func (s *issues) lists() (conflicts, warnings []meshv1alpha1.PlanIssue) {
	for k, g := range s.groups {
		i := meshv1alpha1.PlanIssue{Reason: k.reason, Cluster: k.cluster, Target: k.target, Message: g.render()}
		if k.warning {
			warnings = append(warnings, i)
		} else {
			conflicts = append(conflicts, i)
		}
	}
	sortIssues(conflicts)
	sortIssues(warnings)
	return conflicts, warnings
}

func (g *issueGroup) render() string {
	if len(g.items) == 0 {
		return g.lead
	}
	items := slices.Clone(g.items)
	slices.Sort(items)
	items = slices.Compact(items)
	if len(items) == 1 {
		return g.lead + ": " + items[0]
	}
	shown := items[:min(len(items), maxIssueExamples)]
	msg := fmt.Sprintf("%s (%d): %s", g.lead, len(items), strings.Join(shown, "; "))
	if rest := len(items) - len(shown); rest > 0 {
		msg += fmt.Sprintf("; and %d more", rest)
	}
	return msg
}

func sortIssues(list []meshv1alpha1.PlanIssue) {
	slices.SortFunc(list, func(a, b meshv1alpha1.PlanIssue) int {
		return cmp.Or(
			strings.Compare(a.Cluster, b.Cluster),
			strings.Compare(a.Target, b.Target),
			strings.Compare(a.Reason, b.Reason),
			strings.Compare(a.Message, b.Message),
		)
	})
}
