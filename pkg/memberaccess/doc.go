// Package memberaccess owns reaching a member cluster safely with a
// tenant's kubeconfig: the kubeconfig checks, the policy of member API
// server addresses, the transport, the verified identity, the credential's
// expiry, and the kinds and reasons of its errors. It keeps no caches: the
// member caches (pkg/clusters), admission and kubectl mesh build on it.
package memberaccess
