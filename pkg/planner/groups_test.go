package planner

import (
	"net/netip"
	"strings"
	"testing"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

// memberSpec is a node reduced to what grouping and leader choice read.
type memberSpec struct {
	name     string
	hint     bool
	endpoint string
	location string
	noIP     bool
}

func infos(t *testing.T, specs []memberSpec) []nodeInfo {
	t.Helper()
	out := make([]nodeInfo, len(specs))
	for i, s := range specs {
		e, err := parseKiloEndpoint(s.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = nodeInfo{name: s.name, leaderHint: s.hint, kiloEndpoint: e, location: s.location, kiloReady: true}
		if !s.noIP {
			out[i].internalIP = netip.MustParseAddr("192.168.0.1")
		}
	}
	return out
}

func TestFindLeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []memberSpec
		want    string
	}{
		{"first by name when nothing stands out", []memberSpec{{name: "a", endpoint: "10.0.0.1:1"}, {name: "b", endpoint: "10.0.0.2:1"}}, "a"},
		{"public endpoint wins", []memberSpec{{name: "a", endpoint: "10.0.0.1:1"}, {name: "b", endpoint: "203.0.113.2:1"}}, "b"},
		{"annotation beats public", []memberSpec{{name: "a", endpoint: "203.0.113.1:1"}, {name: "b", hint: true, endpoint: "10.0.0.2:1"}}, "b"},
		{"annotation with public beats earlier annotation", []memberSpec{{name: "a", hint: true, endpoint: "10.0.0.1:1"}, {name: "b", hint: true, endpoint: "203.0.113.2:1"}}, "b"},
		{"first annotated when none is public", []memberSpec{{name: "a", endpoint: "10.0.0.1:1"}, {name: "b", hint: true, endpoint: "10.0.0.2:1"}, {name: "c", hint: true, endpoint: "10.0.0.3:1"}}, "b"},
		{"DNS is never public", []memberSpec{{name: "a", endpoint: "10.0.0.1:1"}, {name: "b", endpoint: "wg.example.com:1"}}, "a"},
		{"100.64/10 is public", []memberSpec{{name: "a", endpoint: "10.0.0.1:1"}, {name: "b", endpoint: "100.64.0.2:1"}}, "b"},
		{"fd12:: is public to Kilo", []memberSpec{{name: "a", endpoint: "[fd00::1]:1"}, {name: "b", endpoint: "[fd12::2]:1"}}, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := infos(t, tc.members)
			members := make([]int, len(nodes))
			for i := range members {
				members[i] = i
			}
			if got := nodes[findLeader(nodes, members)].name; got != tc.want {
				t.Errorf("leader %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFormGroupsAndWireGuardIPs(t *testing.T) {
	nodes := infos(t, []memberSpec{
		{name: "a1", endpoint: "10.0.0.1:1", location: "zrh"},
		{name: "a2", endpoint: "10.0.0.2:1", location: "ams"},
		{name: "a3", endpoint: "10.0.0.3:1", location: "zrh"},
		{name: "b1", endpoint: "10.0.0.4:1", location: "ams", noIP: true},
		{name: "c1", endpoint: "10.0.0.5:1", location: ""},
	})
	nodes = append(nodes, nodeInfo{name: "dead", location: "aaa"}) // not Ready: no group at all
	for _, tc := range []struct {
		gran meshv1alpha1.Granularity
		want string
	}{
		{meshv1alpha1.GranularityLocation, "location:=c1@10.4.0.1 location:ams=a2@10.4.0.2 location:zrh=a1,a3@10.4.0.3 node:b1=b1@10.4.0.4"},
		{meshv1alpha1.GranularityFull, "node:a1=a1@10.4.0.1 node:a2=a2@10.4.0.2 node:a3=a3@10.4.0.3 node:b1=b1@10.4.0.4 node:c1=c1@10.4.0.5"},
		{meshv1alpha1.GranularityCross, "node:a1=a1@10.4.0.1 node:a2=a2@10.4.0.2 node:a3=a3@10.4.0.3 node:b1=b1@10.4.0.4 node:c1=c1@10.4.0.5"},
	} {
		t.Run(string(tc.gran), func(t *testing.T) {
			groups := formGroups(nodes, tc.gran)
			allocateWireGuardIPs(groups, netip.MustParsePrefix("10.4.0.0/16"))
			if got := describeGroups(nodes, groups); got != tc.want {
				t.Errorf("groups\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestAllocateWireGuardIPsExhaustion(t *testing.T) {
	groups := make([]group, 5)
	allocateWireGuardIPs(groups, netip.MustParsePrefix("10.4.0.0/30"))
	var got []string
	for _, g := range groups {
		got = append(got, g.wireguardIP.String())
	}
	// kg's allocator hands out every address after the network address.
	if want := "10.4.0.1 10.4.0.2 10.4.0.3 invalid IP invalid IP"; strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	v6 := make([]group, 2)
	allocateWireGuardIPs(v6, netip.MustParsePrefix("fd04::/64"))
	if v6[1].wireguardIP.String() != "fd04::2" {
		t.Errorf("IPv6 subnet: %v", v6[1].wireguardIP)
	}
}

func describeGroups(nodes []nodeInfo, groups []group) string {
	var parts []string
	for _, g := range groups {
		var names []string
		for _, m := range g.members {
			names = append(names, nodes[m].name)
		}
		parts = append(parts, g.name+"="+strings.Join(names, ",")+"@"+g.wireguardIP.String())
	}
	return strings.Join(parts, " ")
}

func TestDecideGranularity(t *testing.T) {
	mk := func(ready []string, dead []string) []nodeInfo {
		var out []nodeInfo
		for _, g := range ready {
			out = append(out, nodeInfo{granularity: g, kiloReady: true})
		}
		for _, g := range dead {
			out = append(out, nodeInfo{granularity: g})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		spec     meshv1alpha1.Granularity
		nodes    []nodeInfo
		want     meshv1alpha1.Granularity
		source   meshv1alpha1.GranularitySource
		warnings []string
	}{
		{"spec wins", meshv1alpha1.GranularityCross, mk([]string{"location"}, nil), meshv1alpha1.GranularityCross, meshv1alpha1.GranularitySourceSpec, nil},
		{"no annotation: Kilo's default", meshv1alpha1.GranularityAuto, mk([]string{"", ""}, nil), meshv1alpha1.GranularityLocation, meshv1alpha1.GranularitySourceDefault, nil},
		{"empty spec means Auto", "", mk([]string{"full"}, nil), meshv1alpha1.GranularityFull, meshv1alpha1.GranularitySourceNodes, nil},
		{"unanimous", meshv1alpha1.GranularityAuto, mk([]string{"cross", "cross"}, nil), meshv1alpha1.GranularityCross, meshv1alpha1.GranularitySourceNodes, nil},
		{"majority, with a warning", meshv1alpha1.GranularityAuto, mk([]string{"full", "full", "location"}, nil), meshv1alpha1.GranularityFull, meshv1alpha1.GranularitySourceNodes, []string{WarningGranularityDisagreement}},
		{"tie goes to location", meshv1alpha1.GranularityAuto, mk([]string{"full", "location"}, nil), meshv1alpha1.GranularityLocation, meshv1alpha1.GranularitySourceNodes, []string{WarningGranularityDisagreement}},
		{"dead nodes do not outvote live ones", meshv1alpha1.GranularityAuto, mk([]string{"full"}, []string{"location", "location"}), meshv1alpha1.GranularityFull, meshv1alpha1.GranularitySourceNodes, nil},
		{"dead nodes count when no live node says", meshv1alpha1.GranularityAuto, mk([]string{""}, []string{"full"}), meshv1alpha1.GranularityFull, meshv1alpha1.GranularitySourceNodes, nil},
		{"unknown value ignored", meshv1alpha1.GranularityAuto, mk([]string{"mesh", "full"}, nil), meshv1alpha1.GranularityFull, meshv1alpha1.GranularitySourceNodes, []string{WarningUnknownGranularity}},
		{"unknown spec value detects", "Everything", mk([]string{"full"}, nil), meshv1alpha1.GranularityFull, meshv1alpha1.GranularitySourceNodes, []string{WarningUnknownGranularity}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideGranularity("c", tc.spec, tc.nodes)
			if d.value != tc.want || d.source != tc.source {
				t.Errorf("got %s from %s, want %s from %s", d.value, d.source, tc.want, tc.source)
			}
			var reasons []string
			for _, w := range d.warnings {
				reasons = append(reasons, w.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(tc.warnings, ",") {
				t.Errorf("warnings %v, want %v", d.warnings, tc.warnings)
			}
		})
	}
}
