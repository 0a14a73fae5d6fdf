package framework

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The chart's monitoring files (relative to the repository root), whose
// PromQL may name only metrics the server exports: docs/reference_test.go
// checks the server's own against the source, test/install the others
// against a real scrape.
var (
	MonitoringAlertsFile    = filepath.Join("artifacts", "charts", "kilo-mesh-apiserver", "files", "alerts.yaml")
	MonitoringDashboardFile = filepath.Join("artifacts", "charts", "kilo-mesh-apiserver", "files", "dashboard.json")
)

var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords  = []string{"and", "or", "unless", "bool", "offset", "by", "without"}
	grafanaLabels = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)
)

// PromQLMetrics returns the metric names an expression selects: the
// identifiers left once strings, label matchers, ranges and grouping
// clauses are gone that are neither functions (followed by a parenthesis)
// nor keywords.
func PromQLMetrics(expr string) []string {
	expr = promStrings.ReplaceAllString(expr, " ")
	expr = promMatchers.ReplaceAllString(expr, " ")
	expr = promRanges.ReplaceAllString(expr, " ")
	expr = promGrouping.ReplaceAllString(expr, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		rest := strings.TrimSpace(expr[loc[1]:])
		if strings.HasPrefix(rest, "(") || slices.Contains(promKeywords, name) || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// MonitoringMetrics returns every metric name the chart's alerts and
// dashboard query, sorted.
func MonitoringMetrics() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	var exprs []string
	var alerts struct {
		Groups []struct {
			Rules []struct{ Expr string }
		}
	}
	if err := readInto(filepath.Join(root, MonitoringAlertsFile), func(b []byte, v any) error { return yaml.Unmarshal(b, v) }, &alerts); err != nil {
		return nil, err
	}
	for _, g := range alerts.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	var dashboard struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct{ Definition string }
		}
	}
	if err := readInto(filepath.Join(root, MonitoringDashboardFile), json.Unmarshal, &dashboard); err != nil {
		return nil, err
	}
	for _, p := range dashboard.Panels {
		for _, t := range p.Targets {
			exprs = append(exprs, t.Expr)
		}
	}
	var names []string
	for _, v := range dashboard.Templating.List {
		for _, m := range grafanaLabels.FindAllStringSubmatch(v.Definition, -1) {
			names = append(names, m[1])
		}
	}
	for _, e := range exprs {
		if strings.TrimSpace(e) == "" {
			return nil, fmt.Errorf("an empty expression in the chart's monitoring files")
		}
		names = append(names, PromQLMetrics(e)...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func readInto(path string, unmarshal func([]byte, any) error, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
