package clustermesh

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The computed views print as tables in kubectl get --subresource, as the
// main resource does: the generic server converts a subresource's result
// to a Table when its storage is a rest.TableConvertor.
//
// The server reads the metadata of every row's object (meta.Accessor) to
// serve it as PartialObjectMetadata, so a row always carries an object.
// Only when the client asks for includeObject=Object (kubectl get
// --sort-by) is the object itself served: each row then carries the view
// restricted to that row, and otherwise all rows share the view, of which
// only the metadata is read.

// Cells of values that are not known or not there, as kubectl writes them.
const (
	cellUnknown = "<unknown>"
	cellNone    = "<none>"
)

// maxCellItems bounds the items one cell names, so that a group of many
// nodes does not make every line of the table wrap; -o yaml has them all.
const maxCellItems = 4

// wantsObjects reports whether the client asked for each row's object.
func wantsObjects(opts runtime.Object) bool {
	o, ok := opts.(*metav1.TableOptions)
	return ok && o.IncludeObject == metav1.IncludeObject
}

// fewItems joins the first maxCellItems items and counts the rest.
func fewItems(items []string) string {
	switch {
	case len(items) == 0:
		return cellNone
	case len(items) <= maxCellItems:
		return strings.Join(items, ",")
	default:
		return fmt.Sprintf("%s +%d more", strings.Join(items[:maxCellItems], ","), len(items)-maxCellItems)
	}
}
