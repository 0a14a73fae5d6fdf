package planner

import (
	"fmt"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// clusterView renders the source-side view of a reachable cluster.
func (pl *planner) clusterView(s *source) meshv1alpha1.ClusterPlan {
	v := meshv1alpha1.ClusterPlan{
		Name:              s.name,
		Reachable:         true,
		BehindNAT:         s.entry.BehindNAT,
		Granularity:       s.gran.value,
		GranularitySource: s.gran.source,
	}
	if s.extrasHolder >= 0 {
		v.ExtraNetworksGroup = s.groups[s.extrasHolder].name
	}
	groupOf := make([]int32, len(s.nodes))
	for i := range groupOf {
		groupOf[i] = -1
	}
	v.Groups = make([]meshv1alpha1.GroupPlan, len(s.groups))
	names := make([]string, 0, len(s.nodes)) // one backing array for all member lists
	wireguardIPs := pl.batch(len(s.groups), len("255.255.255.255"))
	for gi := range s.groups {
		g, e := &s.groups[gi], &s.exports[gi]
		from := len(names)
		for _, i := range g.members {
			names = append(names, s.nodes[i].name)
			groupOf[i] = int32(gi)
		}
		gp := &v.Groups[gi] // zero: filled in place
		gp.Name, gp.Leader, gp.Members, gp.Ready = g.name, s.nodes[g.leader].name, names[from:len(names):len(names)], e.ready
		if g.wireguardIP.IsValid() {
			wireguardIPs.buf = g.wireguardIP.AppendTo(wireguardIPs.buf)
		}
		wireguardIPs.end()
		if e.ready {
			gp.PeerName = e.name
			gp.Endpoint = e.hostPort
			gp.PersistentKeepalive = int32(e.keepalive)
			v.Summary.ReadyGroups++
		} else {
			gp.Reason, gp.Message = e.reason, e.message
		}
	}
	ips := wireguardIPs.text()
	for gi := range v.Groups {
		v.Groups[gi].WireguardIP = wireguardIPs.at(ips, gi) // "" when there is none
	}

	skipped := map[string]int32{}
	messages := pl.batch(len(s.nodes), len("advertised through location:, led by ")+40)
	messageOf := make([]int, len(s.nodes))
	v.Nodes = make([]meshv1alpha1.NodeDecision, len(s.nodes))
	for i := range s.nodes {
		n := &s.nodes[i]
		d := &v.Nodes[i] // zero: filled in place
		d.Node, d.Notes = n.name, n.notes
		var g *group
		var e *export
		if gi := groupOf[i]; gi >= 0 {
			g, e = &s.groups[gi], &s.exports[gi]
			d.Group = g.name
			d.Role = meshv1alpha1.NodeRoleMember
			if g.leader == i {
				d.Role = meshv1alpha1.NodeRoleLeader
			}
			v.Summary.KiloReadyNodes++
		}
		switch {
		case n.reason != "":
			d.Reason, d.Message = n.reason, n.message
			if d.Role == meshv1alpha1.NodeRoleLeader && e.ready {
				d.Message += fmt.Sprintf("; it still leads %s in Kilo, so that group's Peer uses its key and endpoint", g.name)
			}
		case !e.ready:
			d.Reason, d.Message = e.reason, fmt.Sprintf("group %s is not exported: %s", g.name, e.message)
		default:
			d.Included, d.Reason = true, ReasonAdvertised
			if d.Role == meshv1alpha1.NodeRoleLeader {
				messageOf[i] = messages.add("leads ", g.name, ", exported as Peer ", e.name)
			} else {
				messageOf[i] = messages.add("advertised through ", g.name, ", led by ", s.nodes[g.leader].name)
			}
			v.Summary.AdvertisedNodes++
		}
		if !d.Included {
			skipped[d.Reason]++
		}
	}
	texts := messages.text()
	for i := range v.Nodes {
		if v.Nodes[i].Included {
			v.Nodes[i].Message = messages.at(texts, messageOf[i])
		}
	}
	v.Summary.Nodes = int32(len(s.nodes))
	v.Summary.Groups = int32(len(s.groups))
	for _, r := range sortedKeys(skipped) {
		v.Summary.SkippedByReason = append(v.Summary.SkippedByReason, meshv1alpha1.ReasonCount{Reason: r, Count: skipped[r]})
	}
	return v
}
