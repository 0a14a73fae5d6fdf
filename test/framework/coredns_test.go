package framework

import (
	"net/netip"
	"strings"
	"testing"
)

// TestLoopbackCorefile: kubeadm's Corefile on loopback changes only the
// lines a pod's network stands behind, and keeps every other line.
func TestLoopbackCorefile(t *testing.T) {
	l := CoreDNSLoopback{Addr: netip.MustParseAddr("127.0.0.1"), Port: 1053, Kubeconfig: "/k.yaml", HealthPort: 1, ReadyPort: 2, MetricsPort: 3, UpstreamPort: 4}
	got, err := LoopbackCorefile(KubeadmCorefile, l)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		".:53 {\n", ".:1053 {\n    bind 127.0.0.1\n",
		"    health {\n", "    health 127.0.0.1:1 {\n",
		"    ready\n", "    ready 127.0.0.1:2\n",
		"       pods insecure\n", "       kubeconfig /k.yaml\n       pods insecure\n",
		"    prometheus :9153\n", "    prometheus 127.0.0.1:3\n",
		"    forward . /etc/resolv.conf {\n", "    forward . 127.0.0.1:4 {\n",
	).Replace(KubeadmCorefile)
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := LoopbackCorefile(".:5353 {\n}\n", l); err == nil {
		t.Errorf("a Corefile without .:53 and kubernetes: no error")
	}
}
