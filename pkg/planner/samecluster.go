package planner

import (
	"fmt"
	"slices"
	"strings"
)

// checkSameClusters reports entries that reach one cluster: its Peers would
// be planned on itself (kg rejects them, as keys of its own nodes) and the
// mesh would carry nothing between the two entries. The entries are named,
// never the identity.
func (pl *planner) checkSameClusters() {
	byIdentity := map[string][]string{}
	for _, s := range pl.sources {
		if id := pl.in.Clusters[s.name].Identity; id != "" {
			byIdentity[id] = append(byIdentity[id], s.name)
		}
	}
	for _, names := range byIdentity {
		if len(names) < 2 {
			continue
		}
		slices.Sort(names)
		for _, n := range names[1:] {
			pl.issues.conflict(ConflictSameCluster, n, "", fmt.Sprintf(
				"entries %s reach the same cluster (one verified identity); list a cluster once per mesh and remove the others", strings.Join(names, ", ")), "")
		}
	}
}
