package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kilov1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/kilo/v1alpha1"
	"github.com/kilo-mesh/kilo-mesh-apiserver/test/framework"
)

// buildAgent builds test/dataplane/agent into dir.
func buildAgent(ctx context.Context, dir string) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "dataplane-agent")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./test/dataplane/agent")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./test/dataplane/agent: %w\n%s", err, b)
	}
	return out, nil
}

// grantAgents lets the agents' user read what kg reads, Nodes and Peers,
// on every cluster, and nothing else.
func (b *Bed) grantAgents(ctx context.Context) error {
	const name = "kilo-mesh-dataplane:kg"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{kilov1alpha1.SchemeGroupVersion.Group}, Resources: []string{"peers"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: agentUser}},
	}
	for i := range Clusters {
		rbac := b.Env.Client(i, framework.UserAdmin).RbacV1()
		if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// addNode makes node n: its namespace on the underlay, its pod, its Node
// object as kg leaves it (the leader of each location carries the leader
// and wireguard-ip annotations), and, where kg runs, its agent.
func (b *Bed) addNode(ctx context.Context, n *Node) error {
	var err error
	underlayNet := netip.PrefixFrom(n.Underlay, 24)
	internalNet := netip.PrefixFrom(n.Internal, 24)
	if b.behindNAT(n.Cluster) {
		n.Namespace, err = b.natHost(ctx, n, underlayNet, internalNet)
	} else {
		n.Namespace, err = b.underlay.AddHost(ctx, n.Name, underlayNet, internalNet)
	}
	if err != nil {
		return err
	}
	if err := b.underlay.AddAddressInterface(ctx, n.Namespace, "pods", n.Pod); err != nil {
		return err
	}
	if err := b.echo.listen(n.Namespace, n.Name, n.Pod); err != nil {
		return err
	}
	priv, pub, err := framework.NewWireGuardKey()
	if err != nil {
		return err
	}
	n.privateKey, n.publicKey = priv, pub
	k := framework.KiloNode{
		Name:       n.Name,
		Location:   n.Location,
		Endpoint:   n.Endpoint(),
		InternalIP: internalNet.String(),
		PodCIDR:    n.PodCIDR.String(),
		Key:        pub,
		NoKey:      n.Skip == SkipNoKey,
	}
	if n.Skip == SkipStale {
		k.LastSeen = time.Now().Add(-10 * time.Minute)
	}
	if lead, ip := initialLeader(n); lead {
		k.Leader, k.WireGuardIP = true, ip.String()
	}
	if b.behindNAT(n.Cluster) {
		k.PersistentKeepalive = NATKeepalive
	}
	if _, err := b.Env.CreateKiloNode(ctx, n.Cluster, k); err != nil {
		return err
	}
	if !n.RunsAgent() {
		return nil
	}
	dir := filepath.Join(b.underlay.LogDir, n.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	n.keyFile, n.statusFile = filepath.Join(dir, "private-key"), filepath.Join(dir, "status.json")
	if err := os.WriteFile(n.keyFile, []byte(priv+"\n"), 0o600); err != nil {
		return err
	}
	n.agent, err = b.underlay.Start(n.Namespace, "agent-"+n.Name, b.agentBin,
		"--kubeconfig="+b.Env.Kubeconfig(n.Cluster, agentUser),
		"--api-netns="+framework.HostNetnsPath(),
		"--node="+n.Name,
		"--private-key-file="+n.keyFile,
		"--status-file="+n.statusFile,
		"--port="+strconv.Itoa(WireGuardPort),
	)
	return err
}

// initialLeader tells whether n leads its location at the start, and its
// WireGuard IP then: a1 and b1 lead, which Kilo's rule agrees with (the
// leader annotation on a node with a public endpoint); location:a takes
// .1 of the Kilo subnet and location:b .2, in group-name order.
func initialLeader(n *Node) (bool, netip.Prefix) {
	switch n.Name {
	case fmt.Sprintf("c%d-a1", n.Cluster):
		return true, netip.PrefixFrom(nthHost(wireguardCIDR(n.Cluster), 1), 16)
	case fmt.Sprintf("c%d-b1", n.Cluster):
		return true, netip.PrefixFrom(nthHost(wireguardCIDR(n.Cluster), 2), 16)
	}
	return false, netip.Prefix{}
}

// AgentStatus is what a node's agent applied last (its status file).
type AgentStatus struct {
	Group      string    `json:"group"`
	Leader     string    `json:"leader"`
	IsLeader   bool      `json:"isLeader"`
	PublicKey  string    `json:"publicKey"`
	Generation int       `json:"generation"`
	AppliedAt  time.Time `json:"appliedAt"`
	Notes      []string  `json:"notes"`
	// PeerKeys are the public keys of its WireGuard peers.
	PeerKeys []string `json:"-"`
}

// AgentStatus reads the status file of n's agent.
func (n *Node) AgentStatus() (AgentStatus, error) {
	var s struct {
		AgentStatus
		Peers []struct {
			PublicKey string `json:"publicKey"`
		} `json:"peers"`
	}
	data, err := os.ReadFile(n.statusFile)
	if err != nil {
		return s.AgentStatus, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s.AgentStatus, err
	}
	for _, p := range s.Peers {
		s.PeerKeys = append(s.PeerKeys, p.PublicKey)
	}
	return s.AgentStatus, nil
}

// setPrivateKey gives n's agent a new private key (kg restarted with a new
// key file) and waits until its device uses it. It returns the new public
// key.
func (b *Bed) setPrivateKey(ctx context.Context, n *Node) (string, error) {
	priv, pub, err := framework.NewWireGuardKey()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(n.keyFile, []byte(priv+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := n.agent.Signal(syscall.SIGHUP); err != nil {
		return "", err
	}
	err = framework.Eventually(ctx, 20*time.Millisecond, 10*time.Second, func(context.Context) error {
		s, err := n.AgentStatus()
		if err != nil {
			return err
		}
		if s.PublicKey != pub {
			return fmt.Errorf("agent of %s still uses key %s", n.Name, s.PublicKey)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	n.privateKey, n.publicKey = priv, pub
	n.mu.Unlock()
	return pub, nil
}
