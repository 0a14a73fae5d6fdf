package clusters

import (
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/memberaccess"
)

// canonicalPolicy writes an allowed set the same way whatever its order,
// for the cluster identity: two meshes share a client only under the same
// policy, so a namespace allowed less never rides on a connection dialled
// for one allowed more.
func canonicalPolicy(allowed []netip.Prefix) string {
	ps := make([]string, len(allowed))
	for i, p := range allowed {
		ps[i] = p.Masked().String()
	}
	slices.Sort(ps)
	return "allow:" + strings.Join(slices.Compact(ps), ",")
}

// checkServerLiteral checks a server URL whose host is an IP address
// before anything is built for it; a host name is checked when dialled.
func checkServerLiteral(server string, allowed []netip.Prefix) *memberaccess.Error {
	u, err := url.Parse(server)
	if err != nil {
		return newError(memberaccess.ErrServerURL, "", "server is not a valid URL")
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	if err := memberaccess.CheckServerAddress(addr, allowed); err != nil {
		var e *memberaccess.Error
		errors.As(err, &e)
		return e
	}
	return nil
}
