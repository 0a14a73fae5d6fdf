package memberaccess

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// ServerIdentity returns which API server the current context of a
// kubeconfig reaches: its server URL, normalized so that two URLs reaching
// the same server are equal whoever wrote them and with whatever
// credentials. It is the Host of what ParseKubeconfig returns, and tells
// admission which meshes share a member cluster. (The Manager's cache key,
// clusterID, adds the credentials on purpose: two tenants never share a
// cache.)
//
// The URL is refused as ParseKubeconfig refuses it (an *Error, which never
// quotes the URL). Nothing else of the kubeconfig is checked: which server
// it names does not depend on the credentials being acceptable.
func ServerIdentity(kubeconfig []byte) (string, error) {
	kc, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return "", err
	}
	kctx, cluster, err := currentCluster(kc)
	if err != nil {
		return "", err
	}
	return normalizeServer(cluster.Server, fmt.Sprintf("clusters[%q].cluster.server", kctx.Cluster))
}

// normalizeServer checks a server URL and writes it the way client-go will
// use it, so that what differs in writing only is one server:
//   - scheme https only, lower-case;
//   - the host name lower-case (DNS names are case-insensitive), an IP
//     address in its canonical form (an IPv4-mapped IPv6 address as IPv4:
//     the same socket is reached), and IPv6 in brackets;
//   - the port explicit (443 by default) and without leading zeros;
//   - the path decoded and cleaned, without a trailing slash: client-go
//     joins the decoded path (url.URL.Path, not the escaped form) with
//     path.Join, so "/a/", "/a//" and "/%61" all send requests to /a/...
//
// No user information, query or fragment is allowed: client-go would send
// the first as basic auth, and drops the others. Errors never quote the URL:
// it may carry a password.
func normalizeServer(server, field string) (string, error) {
	if server == "" {
		return "", newError(ErrServerURL, field, "server is not set")
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", newError(ErrServerURL, field, "server is not a valid URL")
	}
	if u.User != nil {
		return "", newError(ErrBasicAuth, field, "user information in the server URL is not allowed")
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return "", newError(ErrNotHTTPS, field, "server must be an https:// URL")
	}
	if u.Hostname() == "" || u.Opaque != "" {
		return "", newError(ErrServerURL, field, "server URL has no host")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", newError(ErrServerURL, field, "server URL must not have a query or fragment")
	}
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		host = ip.Unmap().String()
	}
	port := uint64(443)
	if p := u.Port(); p != "" {
		if port, err = strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
			return "", newError(ErrServerURL, field, "server URL has an invalid port")
		}
	}
	cleaned := path.Clean("/" + u.Path)
	if cleaned == "/" {
		cleaned = ""
	}
	if err := checkServerPath(cleaned, field); err != nil {
		return "", err
	}
	norm := url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.FormatUint(port, 10)), Path: cleaned}
	return norm.String(), nil
}

// reservedSegments are path segments of the Kubernetes API itself. A server
// URL's path may only be a plain prefix, the kind a reverse proxy in front
// of API servers uses (Rancher's /k8s/clusters/c-1): a path holding one of
// these reaches into an API server's own resources, where every proxy
// subresource (services, pods and nodes .../proxy) and every aggregated API
// lies, and could answer the identity request with a server the tenant
// controls behind a certificate it does not (the host's own, for one).
var reservedSegments = []string{"api", "apis", "proxy"}

// checkServerPath refuses a server path that is not a plain prefix, judged
// as client-go sends it (decoded and cleaned): segments of anything but
// unreserved characters (RFC 3986: letters, digits, "-", ".", "_", "~"),
// and any reserved segment, whatever its case.
func checkServerPath(cleaned, field string) error {
	for _, seg := range strings.Split(strings.TrimPrefix(cleaned, "/"), "/") {
		if seg == "" {
			continue
		}
		if strings.IndexFunc(seg, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~')
		}) >= 0 {
			return newError(ErrServerPath, field, "the server URL's path holds characters other than letters, digits, '-', '.', '_' and '~'; only a plain prefix is allowed")
		}
		for _, r := range reservedSegments {
			if strings.EqualFold(seg, r) {
				return newError(ErrServerPath, field, fmt.Sprintf("the server URL's path holds the segment %q of the Kubernetes API (its proxies and aggregated APIs lie there); only a plain prefix, such as a reverse proxy's, is allowed", r))
			}
		}
	}
	return nil
}
