package clusters

import (
	"k8s.io/client-go/rest"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// The names of pkg/memberaccess that bindings.go and holds.go use
// unqualified: those two files are being rewritten on another branch (the
// follow, hold and release API of issue 17), and keep compiling unchanged
// through these. Once that is merged, qualify them there and delete this file.

type Error = memberaccess.Error

const (
	ErrKubeconfigInvalid = memberaccess.ErrKubeconfigInvalid
	ErrNoSecretRef       = memberaccess.ErrNoSecretRef
	ErrPeerCRDMissing    = memberaccess.ErrPeerCRDMissing
	ErrPending           = memberaccess.ErrPending
	ErrSecretNotFound    = memberaccess.ErrSecretNotFound
	ErrSecretUnreadable  = memberaccess.ErrSecretUnreadable
	ErrServerNotAllowed  = memberaccess.ErrServerNotAllowed
	ErrUnknownCluster    = memberaccess.ErrUnknownCluster
)

func ParseKubeconfig(data []byte, allowInsecure bool) (*rest.Config, error) {
	return memberaccess.ParseKubeconfig(data, allowInsecure)
}

func PolicySynced(p memberaccess.ServerPolicy) bool { return memberaccess.PolicySynced(p) }
