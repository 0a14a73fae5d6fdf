// Package tables builds the kubectl tables of the server's stored
// resources, one row per object, with the list metadata kubectl needs to
// page and watch, as built-in resources do.
package tables

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Of is the table of obj, one object or a list of T, with cells giving each
// object's row from its name and age.
func Of[T runtime.Object](obj runtime.Object, columns []metav1.TableColumnDefinition, cells func(o T, name, age string) []interface{}) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: columns}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	rows, err := metatable.MetaToTableRow(obj, func(obj runtime.Object, _ metav1.Object, name, age string) ([]interface{}, error) {
		o, ok := obj.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("not a %T: %T", want, obj)
		}
		return cells(o, name, age), nil
	})
	if err != nil {
		return nil, err
	}
	table.Rows = rows
	return table, nil
}
