package v1alpha1

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// viewQuery reads the query parameters of a computed view, each given at
// most once. Unknown parameters are refused so that a typo never silently
// returns the whole mesh.
func viewQuery(in *url.Values, view string, known ...string) (map[string]string, error) {
	out := map[string]string{}
	for key, values := range *in {
		if len(values) != 1 {
			return nil, fmt.Errorf("query parameter %q must be given once", key)
		}
		switch {
		case slices.Contains(known, key):
			out[key] = values[0]
		case key == "pretty" || key == "timeout" || key == "includeObject":
			// Generic parameters every GET accepts; includeObject is the
			// Table's (kubectl get --sort-by sends it).
		default:
			return nil, fmt.Errorf("unknown query parameter %q: the %s view takes %s", key, view, strings.Join(known, " and "))
		}
	}
	return out, nil
}
