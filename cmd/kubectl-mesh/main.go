// Command kubectl-mesh is the kubectl plugin of kilo-mesh-apiserver: with it
// on PATH, `kubectl mesh ...` works. The commands live in pkg/plugin.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/plugin/cli"
)

func main() {
	cmd := plugin.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cli.Main(cmd.Execute())
}
