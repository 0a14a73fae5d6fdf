package corefile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Zone is the zone of the Multi-Cluster Services API's names.
const Zone = "clusterset.local"

// unexportBound is how long, in seconds, an unexported name may still
// answer: the MCS conformance suite's bound.
const unexportBound = 20

// How the multicluster option came in (Edits.Multicluster).
const (
	MulticlusterLine  = "line"
	MulticlusterBlock = "block"
)

// Edits records what Enable changed, so that Disable removes exactly that
// and nothing a user had written.
type Edits struct {
	Zone string `json:"zone"`
	// ZoneArg: the zone was added to the kubernetes plugin's zones.
	ZoneArg bool `json:"zoneArg,omitempty"`
	// Multicluster: MulticlusterLine (an option line added to the plugin's
	// block), MulticlusterBlock (a block added holding it), or "" (it was
	// there).
	Multicluster string `json:"multicluster,omitempty"`
	// CacheDisable are the cache plugin's disable lines ("success",
	// "denial") the zone was added to, beside the cluster domain.
	CacheDisable []string `json:"cacheDisable,omitempty"`
}

// Empty tells whether nothing was changed.
func (e Edits) Empty() bool { return !e.ZoneArg && e.Multicluster == "" && len(e.CacheDisable) == 0 }

// NotUnderstood is the error of a Corefile this package does not edit:
// Reason says why.
type NotUnderstood struct{ Reason string }

func (e *NotUnderstood) Error() string {
	return "the Corefile is not one this command edits: " + e.Reason
}

func notUnderstood(format string, args ...any) error {
	return &NotUnderstood{Reason: fmt.Sprintf(format, args...)}
}

// Result is an edited Corefile and what was changed.
type Result struct {
	Corefile string
	Edits    Edits
	// Notes are what the user should know about the Corefile as edited.
	Notes []string
}

// Enable adds zone to the zones of the one kubernetes plugin of src and
// the multicluster option for it; where the cache plugin keeps the cluster
// domain out of its cache, it keeps zone out too, so that an unexported
// name stops answering at once. Nothing else changes. A Corefile already
// enabled comes back unchanged with empty Edits.
func Enable(src, zone string) (Result, error) {
	t, err := locate(src, zone)
	if err != nil {
		return Result{}, err
	}
	res := Result{Edits: Edits{Zone: zone}, Notes: t.notes}
	var edits []edit
	k := t.k8s
	lastArg := k.Args[len(k.Args)-1]
	if !slices.ContainsFunc(k.Args, func(a Token) bool { return sameZone(a.Text, zone) }) {
		edits = append(edits, edit{at: lastArg.End, text: " " + zone})
		res.Edits.ZoneArg = true
	}
	switch mc := option(k, "multicluster"); {
	case mc != nil && !slices.ContainsFunc(mc.Args, func(a Token) bool { return sameZone(a.Text, zone) }):
		return Result{}, notUnderstood("its kubernetes plugin's multicluster option (line %d) names other zones", mc.Name.Line)
	case mc != nil:
	case k.Open != nil:
		edits = append(edits, edit{at: lineStart(src, k.Close.Start), text: t.optionIndent() + "multicluster " + zone + "\n"})
		res.Edits.Multicluster = MulticlusterLine
	default:
		ind := indentOf(src, k.Name.Start)
		edits = append(edits, edit{at: lastArg.End, text: " {\n" + ind + indentUnit(ind) + "multicluster " + zone + "\n" + ind + "}"})
		res.Edits.Multicluster = MulticlusterBlock
	}
	cacheEdits, kinds := t.cacheDisables(zone)
	edits = append(edits, cacheEdits...)
	res.Edits.CacheDisable = kinds
	if note := t.cacheNote(zone, kinds); note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.Corefile = apply(src, edits)
	return res, nil
}

// Disable removes from src what e records Enable added, where it still is;
// the rest of src stays as it is.
func Disable(src string, e Edits) (string, error) {
	t, err := locate(src, e.Zone)
	if err != nil {
		return "", err
	}
	var edits []edit
	k := t.k8s
	if e.ZoneArg {
		if i := slices.IndexFunc(k.Args, func(a Token) bool { return sameZone(a.Text, e.Zone) }); i > 0 {
			edits = append(edits, removeToken(k.Args[i-1], k.Args[i]))
		}
	}
	if mc := option(k, "multicluster"); mc != nil && e.Multicluster != "" && len(mc.Args) == 1 && sameZone(mc.Args[0].Text, e.Zone) {
		if e.Multicluster == MulticlusterBlock && len(k.Body) == 1 && len(k.Args) > 0 {
			edits = append(edits, edit{at: k.Args[len(k.Args)-1].End, del: k.Close.End - k.Args[len(k.Args)-1].End})
		} else {
			start := lineStart(src, mc.Name.Start)
			edits = append(edits, edit{at: start, del: lineEnd(src, mc.Name.Start) - start})
		}
	}
	if c := option(&Directive{Body: t.server.Directives}, "cache"); c != nil {
		for _, d := range c.Body {
			if d.Name.Text != "disable" || len(d.Args) < 3 || !slices.Contains(e.CacheDisable, d.Args[0].Text) {
				continue
			}
			if i := slices.IndexFunc(d.Args, func(a Token) bool { return sameZone(a.Text, e.Zone) }); i > 1 {
				edits = append(edits, removeToken(d.Args[i-1], d.Args[i]))
			}
		}
	}
	// A zone removed from the kubernetes plugin's line and a block removed
	// after it may touch: apply keeps them apart by position.
	return apply(src, edits), nil
}

// Enabled tells whether src's kubernetes plugin serves zone with the
// multicluster option.
func Enabled(src, zone string) (bool, error) {
	t, err := locate(src, zone)
	if err != nil {
		return false, err
	}
	mc := option(t.k8s, "multicluster")
	return slices.ContainsFunc(t.k8s.Args, func(a Token) bool { return sameZone(a.Text, zone) }) &&
		mc != nil && slices.ContainsFunc(mc.Args, func(a Token) bool { return sameZone(a.Text, zone) }), nil
}

// Lines are what a user adds by hand to a Corefile Enable does not edit.
func Lines(zone string) string {
	return fmt.Sprintf(`In the server block that answers the cluster's names (usually .:53), add
%[1]s to the zones of the kubernetes plugin and the multicluster option to
its block, and keep every other line:

    kubernetes cluster.local %[1]s in-addr.arpa ip6.arpa {
        ...
        multicluster %[1]s
    }

If that block has a cache plugin with "disable success cluster.local" and
"disable denial cluster.local", add %[1]s to both lines too.`, zone)
}

// target is the kubernetes plugin Enable and Disable edit.
type target struct {
	src    string
	server *ServerBlock
	k8s    *Directive
	notes  []string
}

// locate finds the one server block with a kubernetes plugin that receives
// zone's queries, and refuses whatever it cannot vouch for.
func locate(src, zone string) (*target, error) {
	cf, err := Parse(src)
	if err != nil {
		return nil, notUnderstood("%v", err)
	}
	t := &target{src: src}
	for _, d := range cf.Imports {
		t.notes = append(t.notes, fmt.Sprintf("the Corefile imports %s (line %d), which this command cannot read: nothing there may serve %s", argText(d), d.Name.Line, zone))
	}
	var found []*ServerBlock
	for _, s := range cf.Servers {
		for _, d := range s.Directives {
			switch d.Name.Text {
			case "kubernetes":
				if s.Snippet() {
					return nil, notUnderstood("its kubernetes plugin is in the snippet %s (line %d)", s.Keys[0].Text, d.Name.Line)
				}
				if t.k8s == nil {
					t.k8s = d
				}
				found = append(found, s)
			case "import":
				t.notes = append(t.notes, fmt.Sprintf("the Corefile imports %s (line %d), which this command cannot read: nothing there may serve %s", argText(d), d.Name.Line, zone))
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, notUnderstood("no server block has a kubernetes plugin")
	case 1:
	default:
		return nil, notUnderstood("%d server blocks have a kubernetes plugin (lines %d and %d)", len(found), found[0].Open.Line, found[1].Open.Line)
	}
	t.server = found[0]
	var ports []string
	receives := false
	for _, k := range serverKeys(t.server) {
		if k.plainDNS() && within(zone, k.zone) {
			receives = true
			ports = append(ports, k.port)
		}
	}
	if !receives {
		return nil, notUnderstood("the server block of its kubernetes plugin (line %d, %s) does not receive queries for %s", t.server.Open.Line, keysText(t.server), zone)
	}
	for _, s := range cf.Servers {
		if s == t.server || s.Snippet() {
			continue
		}
		for _, k := range serverKeys(s) {
			// A more specific zone of its own on the same port takes
			// zone's queries away from the kubernetes plugin.
			if k.plainDNS() && k.zone != "" && within(k.zone, zone) && slices.Contains(ports, k.port) {
				return nil, notUnderstood("the server block %s (line %d) already serves %s", keysText(s), s.Open.Line, zone)
			}
		}
	}
	if len(t.k8s.Args) == 0 {
		return nil, notUnderstood("its kubernetes plugin (line %d) names no zones, so it serves those of its server block", t.k8s.Name.Line)
	}
	for _, a := range t.k8s.Args {
		if strings.ContainsAny(a.Text, "{}") || src[a.Start] == '"' || src[a.Start] == '`' {
			return nil, notUnderstood("its kubernetes plugin's zones (line %d) use quotes or placeholders", t.k8s.Name.Line)
		}
	}
	if t.k8s.Open != nil {
		for _, d := range t.k8s.Body {
			if d.Name.Text == "import" {
				return nil, notUnderstood("its kubernetes plugin's block imports %s (line %d)", argText(d), d.Name.Line)
			}
		}
	}
	return t, nil
}

// cacheDisables adds zone to the cache plugin's disable lines that keep the
// kubernetes plugin's own (forward) zones out of the cache.
func (t *target) cacheDisables(zone string) ([]edit, []string) {
	c := option(&Directive{Body: t.server.Directives}, "cache")
	if c == nil {
		return nil, nil
	}
	var edits []edit
	var kinds []string
	for _, d := range c.Body {
		if d.Name.Text != "disable" || len(d.Args) < 2 || (d.Args[0].Text != "success" && d.Args[0].Text != "denial") {
			continue
		}
		zones := d.Args[1:]
		if slices.ContainsFunc(zones, func(a Token) bool { return within(zone, a.Text) }) {
			continue
		}
		if !slices.ContainsFunc(zones, func(a Token) bool { return t.clusterDomain(a.Text) }) {
			continue
		}
		edits = append(edits, edit{at: d.Args[len(d.Args)-1].End, text: " " + zone})
		kinds = append(kinds, d.Args[0].Text)
	}
	return edits, kinds
}

// clusterDomain tells whether z is one of the kubernetes plugin's forward
// zones.
func (t *target) clusterDomain(z string) bool {
	return !reverseZone(z) && slices.ContainsFunc(t.k8s.Args, func(a Token) bool { return sameZone(a.Text, z) })
}

// cacheNote says how long an answer of zone may outlive its service when
// the cache keeps it longer than the conformance bound.
func (t *target) cacheNote(zone string, added []string) string {
	c := option(&Directive{Body: t.server.Directives}, "cache")
	if c == nil || slices.Contains(added, "success") {
		return ""
	}
	for _, d := range c.Body {
		if d.Name.Text == "disable" && len(d.Args) > 0 && d.Args[0].Text == "success" &&
			(len(d.Args) == 1 || slices.ContainsFunc(d.Args[1:], func(a Token) bool { return within(zone, a.Text) })) {
			return ""
		}
	}
	ttl := 5 // the kubernetes plugin's default
	if o := option(t.k8s, "ttl"); o != nil && len(o.Args) == 1 {
		if n, err := strconv.Atoi(o.Args[0].Text); err == nil {
			ttl = n
		}
	}
	cache := 3600 // the cache plugin's default for answers
	if len(c.Args) > 0 {
		if n, err := strconv.Atoi(c.Args[0].Text); err == nil {
			cache = n
		}
	}
	if held := min(ttl, cache); held > unexportBound {
		return fmt.Sprintf("the cache plugin (line %d) keeps answers of %s up to %d s (the kubernetes plugin's ttl %d): an unexported name may answer that long", c.Name.Line, zone, held, ttl)
	}
	return ""
}

// option is the first directive named name in d's block.
func option(d *Directive, name string) *Directive {
	for _, o := range d.Body {
		if o.Name.Text == name {
			return o
		}
	}
	return nil
}

// optionIndent is the indentation of the kubernetes plugin's options.
func (t *target) optionIndent() string {
	if len(t.k8s.Body) > 0 {
		return indentOf(t.src, t.k8s.Body[0].Name.Start)
	}
	ind := indentOf(t.src, t.k8s.Name.Start)
	return ind + indentUnit(ind)
}

// indentUnit is one more level of indentation after ind: a tab where the
// file indents with tabs.
func indentUnit(ind string) string {
	if strings.Contains(ind, "\t") {
		return "\t"
	}
	return "    "
}

func keysText(s *ServerBlock) string {
	var keys []string
	for _, k := range s.Keys {
		keys = append(keys, k.Text)
	}
	return strings.Join(keys, " ")
}

func argText(d *Directive) string {
	if len(d.Args) == 0 {
		return ""
	}
	return d.Args[0].Text
}

// Reloads tells whether the server block of src's kubernetes plugin has
// the reload plugin, which rereads a changed Corefile without a restart.
func Reloads(src, zone string) bool {
	t, err := locate(src, zone)
	return err == nil && option(&Directive{Body: t.server.Directives}, "reload") != nil
}
