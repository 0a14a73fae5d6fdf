package planner

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// wireGuardKeyLen is the size of a Curve25519 public key.
const wireGuardKeyLen = 32

// nodeInfo is one Node as kg sees it, plus what the planner needs beyond kg.
type nodeInfo struct {
	name string
	node *corev1.Node

	key string
	// podCIDRs is spec.podCIDR first, then the other entries of spec.podCIDRs.
	podCIDRs []netip.Prefix
	// kiloEndpoint is kg's own endpoint: force-endpoint if it parses, else endpoint.
	kiloEndpoint Endpoint
	internalIP   netip.Addr // !IsValid() when the node has none
	leaderHint   bool
	location     string
	keepalive    int
	locationIPs  []netip.Prefix
	wireguardIP  netip.Prefix // the kg-written annotation, !IsValid() when absent
	granularity  string

	// kiloReady is kg's own Ready rule; reason/message say why not.
	kiloReady bool
	reason    string
	message   string
	notes     []meshv1alpha1.PlanNote
}

// note records what is left out or ignored of the node. A member decides
// how many there are (an annotation of thousands of malformed entries), so
// past maxNodeNotes one last note says the rest were not listed.
func (n *nodeInfo) note(reason, format string, args ...any) {
	switch {
	case len(n.notes) < maxNodeNotes:
		n.notes = append(n.notes, meshv1alpha1.PlanNote{Reason: reason, Message: fmt.Sprintf(format, args...)})
	case len(n.notes) == maxNodeNotes:
		n.notes = append(n.notes, meshv1alpha1.PlanNote{Reason: reason, Message: "more notes of the node are not listed"})
	}
}

func (n *nodeInfo) skip(reason, format string, args ...any) {
	n.reason = reason
	n.message = fmt.Sprintf(format, args...)
}

// parseNode reads a Node the way kg's translateNode does, into n, which
// must be zero, and applies kg's Ready rule against now. Malformed
// annotations kg would silently ignore become notes, so the plan says what
// kg ignores. The pod CIDR list takes its room from the front of pool when
// there is enough; the rest of pool is returned.
func parseNode(n *nodeInfo, node *corev1.Node, topologyLabel string, now time.Time, pool []netip.Prefix) []netip.Prefix {
	a := node.Annotations
	n.name, n.node = node.Name, node

	n.key = a[kilov1alpha1.AnnotationKey]
	keyProblem := ""
	if n.key == "" {
		keyProblem = ReasonNoPublicKey
	} else if !validKey(n.key) {
		keyProblem = ReasonInvalidPublicKey
	}

	podProblem := ""
	if node.Spec.PodCIDR == "" {
		podProblem = ReasonNoPodCIDR
	} else if p, err := netip.ParsePrefix(node.Spec.PodCIDR); err != nil {
		podProblem = ReasonInvalidPodCIDR
	} else {
		if size := max(1, len(node.Spec.PodCIDRs)); len(pool) >= size {
			n.podCIDRs, pool = pool[:1:size], pool[size:] // capped: appends stay in n's room
		} else {
			n.podCIDRs = make([]netip.Prefix, 1, size)
		}
		n.podCIDRs[0] = canonical(p)
	}
	if podProblem == "" {
		for _, s := range node.Spec.PodCIDRs {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				n.note(NoteMalformedAnnotation, "spec.podCIDRs entry %s is not a CIDR; left out", memberText(s))
				continue
			}
			if p = canonical(p); !containsPrefix(n.podCIDRs, p) {
				n.podCIDRs = append(n.podCIDRs, p)
			}
		}
	}

	_, n.leaderHint = a[kilov1alpha1.AnnotationLeader]
	locationSource := kilov1alpha1.AnnotationLocation
	if loc, ok := a[kilov1alpha1.AnnotationLocation]; ok {
		n.location = loc
	} else {
		n.location, locationSource = node.Labels[topologyLabel], "label "+topologyLabel
	}
	locProblem := locationProblem(n.location)
	if locProblem != "" {
		n.location = ""
	}

	forceEndpoint, forceErr := parseKiloEndpoint(a[kilov1alpha1.AnnotationForceEndpoint])
	if forceErr == nil {
		n.kiloEndpoint = forceEndpoint
	} else if e, err := parseKiloEndpoint(a[kilov1alpha1.AnnotationEndpoint]); err == nil {
		n.kiloEndpoint = e
	}

	n.internalIP = parseInternalIP(n, a)

	if s, ok := a[kilov1alpha1.AnnotationPersistentKeepalive]; ok {
		// kg reads an unparsable value as 0; so does the plan, but says so.
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v >= 0 && v <= 65535 {
			n.keepalive = int(v)
		} else {
			n.note(NoteMalformedAnnotation, "%s=%s is not a keepalive interval in seconds; kg reads it as 0", kilov1alpha1.AnnotationPersistentKeepalive, memberText(s))
		}
	}

	if s, ok := a[kilov1alpha1.AnnotationAllowedLocationIPs]; ok {
		for _, item := range strings.Split(s, ",") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				n.note(NoteMalformedAnnotation, "%s entry %s is not a CIDR; kg ignores it", kilov1alpha1.AnnotationAllowedLocationIPs, memberText(item))
				continue
			}
			n.locationIPs = append(n.locationIPs, canonical(p))
		}
	}

	if s := a[kilov1alpha1.AnnotationWireGuardIP]; s != "" {
		if p, err := netip.ParsePrefix(s); err == nil {
			n.wireguardIP = netip.PrefixFrom(p.Addr().Unmap(), p.Bits())
		} else {
			n.note(NoteMalformedAnnotation, "%s=%s is not an address with a mask", kilov1alpha1.AnnotationWireGuardIP, memberText(s))
		}
	}
	n.granularity = a[kilov1alpha1.AnnotationGranularity]

	// kg's Ready: an endpoint, a key, a pod CIDR and a recent check-in. The
	// first problem found names the reason; the message names the fix.
	switch {
	case keyProblem == ReasonNoPublicKey:
		n.skip(ReasonNoPublicKey, "no %s annotation: kg has not registered this node", kilov1alpha1.AnnotationKey)
	case keyProblem == ReasonInvalidPublicKey:
		n.skip(ReasonInvalidPublicKey, "%s is not the base64 of a 32-byte WireGuard key", kilov1alpha1.AnnotationKey)
	case podProblem == ReasonNoPodCIDR:
		n.skip(ReasonNoPodCIDR, "spec.podCIDR is empty: the node has no pod network yet")
	case podProblem == ReasonInvalidPodCIDR:
		n.skip(ReasonInvalidPodCIDR, "spec.podCIDR %s is not a CIDR", memberText(node.Spec.PodCIDR))
	case locProblem != "":
		n.skip(ReasonInvalidLocation, "the location (%s) is %s, so it cannot name a group", locationSource, locProblem)
	case n.kiloEndpoint.IsZero():
		n.skip(ReasonNoEndpoint, "neither %s nor %s holds a valid host:port", kilov1alpha1.AnnotationForceEndpoint, kilov1alpha1.AnnotationEndpoint)
	default:
		n.kiloReady, n.message = checkedIn(node, now)
		if !n.kiloReady {
			n.reason = ReasonNotReady
		}
	}
	if forceErr != nil && forceErr != errEmptyEndpoint && n.kiloReady {
		n.note(NoteMalformedEndpoint, "%s: %v; kg falls back to %s", kilov1alpha1.AnnotationForceEndpoint, forceErr, kilov1alpha1.AnnotationEndpoint)
	}
	return pool
}

// parseInternalIP follows kg: force-internal-ip overrides internal-ip, and
// "" or "-" there means no internal IP at all. kg reads both as CIDRs (the
// interface mask); a bare IP does not parse and is ignored.
func parseInternalIP(n *nodeInfo, a map[string]string) netip.Addr {
	if s, ok := a[kilov1alpha1.AnnotationForceInternalIP]; ok {
		if s == "" || s == "-" {
			return netip.Addr{}
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			return p.Addr().Unmap()
		}
		n.note(NoteMalformedAnnotation, "%s=%s is not an address with a mask; kg falls back to %s", kilov1alpha1.AnnotationForceInternalIP, memberText(s), kilov1alpha1.AnnotationInternalIP)
	}
	s := a[kilov1alpha1.AnnotationInternalIP]
	if s == "" {
		return netip.Addr{}
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		n.note(NoteMalformedAnnotation, "%s=%s is not an address with a mask; kg treats the node as having no internal IP", kilov1alpha1.AnnotationInternalIP, memberText(s))
		return netip.Addr{}
	}
	return p.Addr().Unmap()
}

// checkedIn applies kg's liveness rule and says why a node does not count.
func checkedIn(node *corev1.Node, now time.Time) (bool, string) {
	if kilov1alpha1.CheckedIn(node, now) {
		return true, ""
	}
	at, err := kilov1alpha1.LastSeen(node)
	if err != nil {
		return false, err.Error()
	}
	return false, fmt.Sprintf("kg last checked in %s ago; Kilo drops nodes silent for %ds",
		now.Sub(at).Truncate(time.Second), int(kilov1alpha1.CheckInWindow.Seconds()))
}

// validKey is wgtypes.ParseKey plus kg's rule that the zero key means none.
func validKey(s string) bool {
	var b [wireGuardKeyLen + 2]byte
	if base64.StdEncoding.DecodedLen(len(s)) > len(b) {
		return false
	}
	n, err := base64.StdEncoding.Decode(b[:], []byte(s))
	if err != nil || n != wireGuardKeyLen {
		return false
	}
	for _, c := range b[:n] {
		if c != 0 {
			return true
		}
	}
	return false
}

func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}
