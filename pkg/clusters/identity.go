package clusters

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"

	"k8s.io/client-go/rest"
)

// clusterID identifies a distinct member cluster, and so one set of clients
// and caches: the local cluster, or a remote one reached with one set of
// credentials. Two meshes whose kubeconfigs carry the same server and
// credentials share caches; different credentials never do, so a tenant
// never sees through another tenant's credentials. Which server a cluster
// is, whatever the credentials, is ServerIdentity.
type clusterID string

const localID clusterID = "local"

// short is a prefix of the ID for logs.
func (id clusterID) short() string {
	if len(id) > 12 {
		return string(id[:12])
	}
	return string(id)
}

// identityHasher derives clusterIDs from client configurations. It is keyed
// with a random secret per Manager: IDs appear in logs, and a plain hash of
// a weak token could be checked against guesses.
type identityHasher struct {
	key []byte
}

func newIdentityHasher() (identityHasher, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return identityHasher{}, fmt.Errorf("generating the cluster identity key: %w", err)
	}
	return identityHasher{key: key}, nil
}

// id hashes what decides which cluster is reached, as whom and under which
// server policy: server URL, TLS settings and credentials of a
// configuration from ParseKubeconfig (which normalizes them), and the
// canonical policy. Client tuning (QPS, timeouts) is left out.
func (h identityHasher) id(cfg *rest.Config, policy string) clusterID {
	mac := hmac.New(sha256.New, h.key)
	writeField(mac, []byte(policy))
	writeField(mac, []byte(cfg.Host))
	writeField(mac, []byte(cfg.APIPath))
	writeField(mac, []byte(cfg.ServerName))
	insecure := []byte{0}
	if cfg.Insecure {
		insecure[0] = 1
	}
	writeField(mac, insecure)
	writeField(mac, cfg.CAData)
	writeField(mac, []byte(cfg.BearerToken))
	writeField(mac, cfg.CertData)
	writeField(mac, cfg.KeyData)
	return clusterID(hex.EncodeToString(mac.Sum(nil)))
}

// writeField length-prefixes b, so that no two different field lists hash
// the same input.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
