package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Output formats of -o.
const (
	OutputYAML = "yaml"
	OutputJSON = "json"
)

// AddOutputFlag gives a command -o yaml|json; what says what it prints.
func AddOutputFlag(cmd *cobra.Command, output *string, what string) {
	cmd.Flags().StringVarP(output, "output", "o", "", "yaml or json: "+what)
	_ = cmd.RegisterFlagCompletionFunc("output", FixedCompletion(OutputYAML, OutputJSON))
}

// PrintObject writes obj as YAML or JSON, with its apiVersion and kind: the
// client's decoder drops them, and a printed object without them cannot be
// applied or read back.
func PrintObject(w io.Writer, obj runtime.Object, format string) error {
	if gvks, _, err := scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		obj = obj.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	return PrintData(w, obj, format)
}

// PrintData writes any encodable value as YAML or JSON.
func PrintData(w io.Writer, v any, format string) error {
	switch format {
	case OutputYAML:
		out, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case OutputJSON:
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", out)
		return err
	default:
		return fmt.Errorf("unknown output format %q: use %s or %s", format, OutputYAML, OutputJSON)
	}
}
