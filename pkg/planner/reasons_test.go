package planner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// conflictConstants reads the Conflict* constants of reasons.go, name to
// value, so that no conflict can be added without the tests seeing it.
func conflictConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Conflict") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal; this test reads reasons from the source", name.Name)
				}
				consts[name.Name], _ = strconv.Unquote(lit.Value)
			}
		}
	}
	if len(consts) == 0 {
		t.Fatal("no Conflict constants found in reasons.go")
	}
	return consts
}

func TestIsNetworkConflict(t *testing.T) {
	// Every conflict, with its class restated: changing a class is a
	// decision this table makes visible.
	tests := map[string]struct {
		reason string
		want   bool
	}{
		"ConflictInvalidNetwork":         {ConflictInvalidNetwork, true},
		"ConflictNetworkOverlap":         {ConflictNetworkOverlap, true},
		"ConflictCIDRClaimedTwice":       {ConflictCIDRClaimedTwice, true},
		"ConflictDuplicateWireGuardIP":   {ConflictDuplicateWireGuardIP, true},
		"ConflictOverlapsTargetNetwork":  {ConflictOverlapsTargetNetwork, true},
		"ConflictCIDRClaimedByForeign":   {ConflictCIDRClaimedByForeign, true},
		"ConflictWireGuardCIDRExhausted": {ConflictWireGuardCIDRExhausted, true},
		"ConflictWireGuardIPOutsideCIDR": {ConflictWireGuardIPOutsideCIDR, true},
		"ConflictCIDRClaimedByOtherMesh": {ConflictCIDRClaimedByOtherMesh, true},
		"ConflictCIDRClaimedByKept":      {ConflictCIDRClaimedByKept, false},
		"ConflictPublicKeyInUse":         {ConflictPublicKeyInUse, false},
		"ConflictSameCluster":            {ConflictSameCluster, false},
		"ConflictDuplicatePublicKey":     {ConflictDuplicatePublicKey, false},
		"ConflictPublicKeyOfTargetNode":  {ConflictPublicKeyOfTargetNode, false},
		"ConflictNameTaken":              {ConflictNameTaken, false},
		"ConflictInvalidPeer":            {ConflictInvalidPeer, false},
		"ConflictEmptyPeer":              {ConflictEmptyPeer, false},
		"ConflictDuplicateNode":          {ConflictDuplicateNode, false},
		"ConflictHostAccessDenied":       {ConflictHostAccessDenied, false},
		"ConflictOutsideHostAccess":      {ConflictOutsideHostAccess, false},
		"ConflictTooManyHostPeers":       {ConflictTooManyHostPeers, false},
		"ConflictEndpointNotAllowed":     {ConflictEndpointNotAllowed, false},
		"ConflictNoRelay":                {ConflictNoRelay, false},
	}
	consts := conflictConstants(t)
	for name, value := range consts {
		tc, ok := tests[name]
		switch {
		case !ok:
			t.Errorf("%s is not in this table: decide whether it is a network conflict, class it in conflictIsNetwork and add it here", name)
		case tc.reason != value:
			t.Errorf("the table's %s is %q, reasons.go says %q", name, tc.reason, value)
		}
		if _, ok := conflictIsNetwork[value]; !ok {
			t.Errorf("%s (%q) has no class in conflictIsNetwork", name, value)
		}
	}
	for name, tc := range tests {
		if _, ok := consts[name]; !ok {
			t.Errorf("the table lists %s, which reasons.go does not declare", name)
		}
		t.Run(name, func(t *testing.T) {
			if got := IsNetworkConflict(tc.reason); got != tc.want {
				t.Errorf("IsNetworkConflict(%q) = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
	if len(conflictIsNetwork) != len(consts) {
		t.Errorf("conflictIsNetwork has %d entries for %d conflict constants: two constants share a value, or it classes something else", len(conflictIsNetwork), len(consts))
	}
	if IsNetworkConflict("NoSuchReason") || IsNetworkConflict(WarningClusterUnreachable) {
		t.Error("a reason that is not a conflict counts as a network conflict")
	}
}

func TestIsNetworkGroupReason(t *testing.T) {
	tests := map[string]struct {
		reason string
		want   bool
	}{
		"InvalidWireGuardCIDR":   {ReasonInvalidWireGuardCIDR, true},
		"WireGuardCIDRExhausted": {ReasonWireGuardCIDRExhausted, true},
		"WireGuardIPOutsideCIDR": {ReasonWireGuardIPOutsideCIDR, true},
		"NoAdvertisedMember":     {ReasonNoAdvertisedMember, true},
		"MalformedEndpoint":      {ReasonMalformedEndpoint, false},
		"NoEndpointNoKeepalive":  {ReasonNoEndpointNoKeepalive, false},
		"unknown":                {"SomethingNew", false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsNetworkGroupReason(tt.reason); got != tt.want {
				t.Errorf("IsNetworkGroupReason(%q) = %v, want %v", tt.reason, got, tt.want)
			}
		})
	}
	// Every classed reason is in the table above.
	if len(groupReasonIsNetwork) != len(tests)-1 {
		t.Errorf("groupReasonIsNetwork classes %d reasons, the table %d", len(groupReasonIsNetwork), len(tests)-1)
	}
}
