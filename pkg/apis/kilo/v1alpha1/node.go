package v1alpha1

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kilo's node contract: the Node annotations kg (Kilo's agent) reads or
// writes, beside the Peer type they feed, plus the predecessor operator's
// cross-cluster endpoint override (host:port, or "-" for a node that cannot
// be dialled from other clusters). Everything in this project that reads a
// Node the way Kilo does takes these names from here.
const (
	AnnotationKey                 = "kilo.squat.ai/key"
	AnnotationEndpoint            = "kilo.squat.ai/endpoint"
	AnnotationForceEndpoint       = "kilo.squat.ai/force-endpoint"
	AnnotationClusterMeshEndpoint = "kilo.squat.ai/clustermesh-endpoint"
	AnnotationInternalIP          = "kilo.squat.ai/internal-ip"
	AnnotationForceInternalIP     = "kilo.squat.ai/force-internal-ip"
	AnnotationLeader              = "kilo.squat.ai/leader"
	AnnotationLocation            = "kilo.squat.ai/location"
	AnnotationPersistentKeepalive = "kilo.squat.ai/persistent-keepalive"
	AnnotationAllowedLocationIPs  = "kilo.squat.ai/allowed-location-ips"
	AnnotationLastSeen            = "kilo.squat.ai/last-seen"
	AnnotationWireGuardIP         = "kilo.squat.ai/wireguard-ip"
	AnnotationGranularity         = "kilo.squat.ai/granularity"
)

// CheckInWindow is how recent kg's last-seen must be for Kilo to count a
// node: kg checks in every 30 s and drops nodes silent for two periods.
const CheckInWindow = 60 * time.Second

// ErrNeverCheckedIn is LastSeen's error for a node without a last-seen
// annotation: kg is not running on it.
var ErrNeverCheckedIn = errors.New("no " + AnnotationLastSeen + " annotation: kg is not running on the node")

// LastSeen is the time of the node's last check-in by kg (the last-seen
// annotation, unix seconds). The error is ErrNeverCheckedIn when there is
// none, and says what is wrong when the value does not parse.
func LastSeen(node *corev1.Node) (time.Time, error) {
	s, ok := node.Annotations[AnnotationLastSeen]
	if !ok || s == "" {
		return time.Time{}, ErrNeverCheckedIn
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s=%q is not a unix time", AnnotationLastSeen, s)
	}
	return time.Unix(sec, 0), nil
}

// CheckInExpires is the moment Kilo stops counting the node unless kg checks
// in again: CheckInWindow after its last check-in. The error is LastSeen's.
func CheckInExpires(node *corev1.Node) (time.Time, error) {
	at, err := LastSeen(node)
	if err != nil {
		return time.Time{}, err
	}
	return at.Add(CheckInWindow), nil
}

// CheckedIn reports whether Kilo counts node as alive at now: its kg checked
// in less than CheckInWindow before. Kilo compares whole seconds; last-seen
// has no fraction, so comparing times is the same rule.
func CheckedIn(node *corev1.Node, now time.Time) bool {
	expires, err := CheckInExpires(node)
	return err == nil && now.Before(expires)
}
