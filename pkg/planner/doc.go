// Package planner computes what a ClusterMesh means for every member
// cluster: which Kilo Peers (kilo.squat.ai/v1alpha1) each must hold, why each
// node is or is not advertised, and how that differs from the Peers the
// clusters hold now. The read-only views and the reconciler both call
// Compute, so what users preview is exactly what gets applied.
//
// The package is pure: no I/O, no goroutines, no clock (Input.Now is the
// time), and it imports only the standard library, k8s.io/api/core/v1,
// k8s.io/apimachinery and this repository's pkg/apis (the API types, Kilo's
// node contract, and the network rules admission applies too) and
// pkg/chunklist (the lists its input and plans are held in).
//
// # The model
//
// Kilo's agent kg meshes the nodes of one cluster. Another cluster can only
// join through Peer objects, and kg silently ignores any Peer that breaks
// its rules, so the planner follows kg exactly where kg decides and is
// stricter where kg is not involved:
//
//   - Readiness is kg's: a key, an endpoint (force-endpoint if it parses,
//     else endpoint), spec.podCIDR, and a last-seen less than 60 s before
//     Now. Nodes kg does not count are skipped and change nothing else.
//   - Groups are kg's segments: one per location ("location:<name>") under
//     location granularity, a node without an internal IP alone
//     ("node:<name>"); one per node under full and cross. The granularity is
//     the spec's, or detected from the nodes' kilo.squat.ai/granularity
//     annotation (see decideGranularity).
//   - The leader of a group is kg's choice (findLeader), because only the
//     leader runs WireGuard. WireGuard IPs are kg's: the hosts .1, .2, ... of
//     the cluster's wireguardCIDR in group-name order; the wireguard-ip
//     annotation is only cross-checked.
//   - A group is exported as one Peer: the leader's key, what other
//     clusters dial (clustermesh-endpoint, force-endpoint, ExternalIP with
//     the cluster's WireGuard port, endpoint: the first present; malformed
//     is an error; clustermesh-endpoint "-" makes a roaming Peer for a node
//     nobody can dial), a keepalive when the cluster is NATed or roaming, and as
//     allowed IPs every advertised member's pod CIDRs (dual stack included)
//     and internal IP, the group's WireGuard IP and allowed-location-ips, in
//     kg's order. One Peer per cluster also carries the serviceCIDR and
//     additionalCIDRs (chosen by rendezvous hashing among ready groups).
//
// # Containment and ownership
//
// Containment is the security boundary. An address goes into a Peer only if
// it lies inside the networks the mesh spec declares for its source cluster,
// never if it overlaps a declared network of the target, and never if
// another Peer of the target claims an overlapping address: such addresses
// are dropped from every Peer that claims them and reported as conflicts,
// since kg would otherwise resolve the tie by Peer name.
//
// Peers carry labels naming the mesh (namespace, name, UID) and the source
// cluster; only Peers whose labels match the mesh's UID are ever updated or
// deleted. Nothing is deleted on a guess: while a source cluster is
// unreachable, or shows no ready group at all, the Peers representing it
// are kept exactly as they are.
//
// # Determinism
//
// Every list in the output is sorted and every choice has a total order, so
// the same input in any order gives byte-identical output. Issues that can
// repeat per node are aggregated per reason and cluster, naming a few
// examples, so the plan stays readable at 50,000 nodes.
//
// # Sharing
//
// A plan is read-only. Each group's Peer is built once, and the same
// *Peer is listed in Plan.DesiredPeers for every target that gets it as it
// is; Peers trimmed for one target share the rest with it; strings share
// buffers. That is what keeps planning 10 x 1,000 nodes at full
// granularity, 90,000 desired Peers, to about 30 MB allocated. Callers
// DeepCopy a Peer before changing it.
//
// Each target's desired Peers (Plan.DesiredPeers), and each cluster's
// groups (Plan.Groups) and node decisions (Plan.Nodes) are Lists
// (list.go); the last two are left out of View, and ServedView fills them
// into the copy it returns with each target's unchanged Peer names, which
// no plan keeps. A List is chunks of about 256, in groups of about 64
// chunks, ending where a name's hash says, so that the layout depends on
// the names alone. A patched plan shares every chunk but the ones its
// change touches with the last plan, so one change costs the same at any
// mesh size, and a patched plan is reflect.DeepEqual to a whole one.
//
// # Where things are
//
// Compute (plan.go) takes an Input (input.go) through these steps and
// returns a Plan (output.go):
//
//   - Analysis (analysis.go): each reachable member cluster becomes a
//     source: its nodes as kg reads them (node.go), its granularity
//     (granularity.go), groups, leaders and WireGuard IPs (groups.go,
//     leader.go), and the containment of its nodes and allowed-location-ips
//     in its declared networks (containment.go).
//   - Exports (exports.go): one per group, with the addresses it claims
//     and the endpoint other clusters dial (endpoint.go). The mesh-wide
//     checks (claims.go) report overlapping declared networks and drop
//     addresses claimed twice; finalize then builds
//     each ready export's Peer template and the cluster's view
//     (clusterview.go).
//   - Targets (targets.go, diff.go): the Peers each target must hold,
//     trimmed by what the target already holds, and the changes to it.
//   - Relay (relay.go): two clusters behind NAT hold no Peer of each
//     other; the relay cluster's group Peer carries on each the other's
//     addresses, as much as both the relay and the spoke may hold.
//
// Start, Diff and Next (incremental.go, incremental_patch.go) plan a mesh
// again after a few changes by patching its last plan, and plan whole
// whenever a change may reach beyond one group's Peer; the result is
// Compute's, exactly.
//
// The stable reasons, and which conflicts are about networks, are in
// reasons.go; issues.go aggregates them; names.go names and labels Peers;
// render_*.go turn a plan into Peer YAML, WireGuard configuration and DOT.
package planner
