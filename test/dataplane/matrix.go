package dataplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Matrix is the connectivity between clusters: for each source and
// destination cluster, how many probed pairs were answered, and their
// round-trip time.
type Matrix struct {
	Title string
	cells map[[2]int]*cell
}

type cell struct {
	ok, total int
	rtts      []time.Duration
}

// NewMatrix sums results up by source and destination cluster.
func NewMatrix(title string, results []Result) Matrix {
	m := Matrix{Title: title, cells: map[[2]int]*cell{}}
	for _, r := range results {
		k := [2]int{r.From.Node.Cluster, r.To.Node.Cluster}
		c := m.cells[k]
		if c == nil {
			c = &cell{}
			m.cells[k] = c
		}
		c.total++
		if r.OK {
			c.ok++
			if r.RTT > 0 {
				c.rtts = append(c.rtts, r.RTT)
			}
		}
	}
	return m
}

// String renders the matrix as a table: rows are sources, columns
// destinations; a cell is "ok" when every pair was answered, with the
// median round trip, else "FAILED n/m"; "-" where nothing was probed.
func (m Matrix) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (rows: from, columns: to; median round trip)\n", m.Title)
	fmt.Fprintf(&b, "%-11s", "")
	for j := range Clusters {
		fmt.Fprintf(&b, " %-20s", ClusterName(j))
	}
	b.WriteString("\n")
	for i := range Clusters {
		fmt.Fprintf(&b, "%-11s", ClusterName(i))
		for j := range Clusters {
			fmt.Fprintf(&b, " %-20s", m.cells[[2]int{i, j}].String())
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (c *cell) String() string {
	if c == nil || c.total == 0 {
		return "-"
	}
	if c.ok < c.total {
		return fmt.Sprintf("FAILED %d/%d", c.total-c.ok, c.total)
	}
	rtt := "?"
	if len(c.rtts) > 0 {
		s := slices.Clone(c.rtts)
		slices.Sort(s)
		rtt = fmtDuration(s[len(s)/2])
	}
	return fmt.Sprintf("ok %d/%d %s", c.ok, c.total, rtt)
}

// fmtDuration prints milliseconds with two decimals.
func fmtDuration(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// Connectivity probes every pod pair of the mesh and, if placed, every
// service across clusters, each for up to timeout. It returns a matrix per
// kind (IPv4 pods, IPv6 pods, services), titled with label, and the pairs
// that failed.
func (b *Bed) Connectivity(ctx context.Context, label string, timeout time.Duration) ([]Matrix, []Result) {
	mesh := b.MeshNodes()
	pairs := Pairs(mesh, mesh)
	kinds := []struct {
		title string
		pairs []Pair
	}{
		{"IPv4 pods", Family(pairs, false)},
		{"IPv6 pods", Family(pairs, true)},
		{"services (to the anchor the plan names)", b.ServicePairs()},
	}
	var all []Pair
	for _, k := range kinds {
		all = append(all, k.pairs...)
	}
	results := b.Reach(ctx, all, timeout)
	var matrices []Matrix
	rest := results
	for _, k := range kinds {
		if len(k.pairs) > 0 {
			matrices = append(matrices, NewMatrix(k.title+", "+label, rest[:len(k.pairs)]))
		}
		rest = rest[len(k.pairs):]
	}
	return matrices, Failed(results)
}
