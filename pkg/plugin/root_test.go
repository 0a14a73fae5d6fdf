package plugin

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}

func TestCommands(t *testing.T) {
	out, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kubectl mesh [command]", "join", "leave", "plan", "peers", "services", "graph", "why", "status", "import", "version", "completion", "--kubeconfig", "--context", "--namespace"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version", "--client")
	if err != nil || !strings.HasPrefix(out, "kubectl-mesh v") {
		t.Errorf("version printed %q, %v", out, err)
	}
	out, err = run(t, "version", "--client", "-o", "json")
	if err != nil || !strings.Contains(out, `"version": "v`) {
		t.Errorf("version -o json printed %q, %v", out, err)
	}
	// Nothing listens on port 1: the client's version, then why the
	// server's is unknown, as a failure.
	out, err = run(t, "version", "--server", "https://127.0.0.1:1")
	if err == nil || !strings.HasPrefix(out, "kubectl-mesh v") || !strings.Contains(err.Error(), "the version of kilo-mesh-apiserver is unknown") {
		t.Errorf("version without a server: printed %q, %v", out, err)
	}
}

// Errors of usage come before any request: no cluster is needed here.
func TestArgumentErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"plan"}, "takes the name of a ClusterMesh"},
		{[]string{"why", "demo"}, "takes a ClusterMesh and a node name"},
		{[]string{"why", "demo", "pod", "p-1"}, "takes a ClusterMesh and a node name, service and NAMESPACE/NAME, or pair and two clusters"},
		{[]string{"why", "demo", "service", "cart"}, "a service is named NAMESPACE/NAME"},
		{[]string{"services"}, "takes the name of a ClusterMesh"},
		{[]string{"join", "demo", "--member-kubeconfig", "x"}, `"name" not set`},
		{[]string{"join", "demo", "--name", "Not_A_Label", "--member-kubeconfig", "x"}, "--name"},
		{[]string{"join", "demo", "--name", "north", "--member-kubeconfig", "x", "--pod-cidrs", "10.0.0.1/8"}, "did you mean 10.0.0.0/8"},
		{[]string{"join", "demo", "--name", "north", "--member-kubeconfig", "x", "--wireguard-cidr", "nonsense"}, "not a CIDR"},
		{[]string{"join", "demo", "--name", "north", "--member-kubeconfig", "x", "--token-expiry", "1m"}, "at least 10m"},
		{[]string{"import"}, `"filename" not set`},
		{[]string{"graph", "demo", "-o", "png"}, "use dot, svg, json or yaml"},
	} {
		_, err := run(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("kubectl mesh %s: got %v, want an error with %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}
