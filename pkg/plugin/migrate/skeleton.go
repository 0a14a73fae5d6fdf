package migrate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// WriteSkeleton writes the mesh of a conversion for the user to complete:
// each required field it could not fill in as a <placeholder> (which the
// server refuses with the field's path if left in), each optional one as a
// commented-out line, under a comment listing the cluster's allowedNetworks.
func WriteSkeleton(w io.Writer, conv Conversion) error {
	mesh := conv.Mesh
	var b strings.Builder
	fmt.Fprintf(&b, `# ClusterMesh %s/%s, converted from the predecessor's flat allowedNetworks
# form, which does not say which network is which. Replace every <...> with
# networks of the cluster's allowedNetworks (listed above its fields),
# uncomment the optional fields that apply, then: kubectl apply -f FILE
apiVersion: %s
kind: %s
metadata:
  name: %s
  namespace: %s
spec:
  clusters:
`, mesh.Namespace, mesh.Name, mesh.APIVersion, mesh.Kind, mesh.Name, mesh.Namespace)
	for _, e := range mesh.Spec.Clusters {
		var missing []Missing
		for _, m := range conv.Missing {
			if m.Cluster == e.Name {
				missing = append(missing, m)
			}
		}
		fields, err := entryFields(e, missing)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", e.Name, err)
		}
		prefix := "  - "
		for _, line := range fields {
			b.WriteString(prefix + line + "\n")
			prefix = "    "
		}
		if len(missing) == 0 {
			continue
		}
		fmt.Fprintf(&b, "    # allowedNetworks of %s: %s\n", e.Name, strings.Join(missing[0].Candidates, ", "))
		for _, m := range missing {
			b.WriteString("    " + m.skeletonLine() + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// entryFields are the YAML lines of an entry's known fields, name first,
// without the missing ones (which the entry holds as null or "").
func entryFields(e any, missing []Missing) ([]string, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	name := map[string]any{"name": fields["name"]}
	delete(fields, "name")
	for _, m := range missing {
		delete(fields, m.Field)
	}
	var lines []string
	for _, part := range []map[string]any{name, fields} {
		if len(part) == 0 {
			continue
		}
		out, err := yaml.Marshal(part)
		if err != nil {
			return nil, err
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")...)
	}
	return lines, nil
}

// skeletonLine is the line of a missing field: a placeholder to replace,
// or, for an optional field, a commented-out one.
func (m Missing) skeletonLine() string {
	value := "<" + m.What + ">"
	if m.Many {
		value = "[" + value + "]"
	}
	need, comment := "required", ""
	if !m.Required {
		need, comment = "optional", "# "
	}
	return fmt.Sprintf("%-50s # %s: %s the above", comment+m.Field+": "+value, need, m.count())
}
