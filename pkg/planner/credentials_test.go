package planner

import (
	"reflect"
	"strings"
	"testing"
	"time"

	meshv1alpha1 "github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apis/mesh/v1alpha1"
)

func TestCredentialWarnings(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		name        string
		expiry      time.Time
		unreachable bool
		reason      string // "" for no warning
	}{
		{"no expiry stated", time.Time{}, false, ""},
		{"a year left", fixtureNow.Add(365 * day), false, ""},
		{"just over the window", fixtureNow.Add(CredentialRenewWithin + time.Second), false, ""},
		{"at the window", fixtureNow.Add(CredentialRenewWithin), false, WarningCredentialExpiring},
		{"an hour left", fixtureNow.Add(time.Hour), false, WarningCredentialExpiring},
		{"expiring now", fixtureNow, false, WarningCredentialExpired},
		{"expired, and so unreachable", fixtureNow.Add(-day), true, WarningCredentialExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t)
			snap := in.Clusters["us"]
			snap.CredentialExpiry = tc.expiry
			if tc.unreachable {
				snap = ClusterSnapshot{Error: "Unauthorized", CredentialExpiry: tc.expiry}
			}
			in.Clusters["us"] = snap
			p := mustCompute(t, in)
			var got []meshv1alpha1.PlanIssue
			for _, w := range p.View.Warnings {
				if w.Reason == WarningCredentialExpiring || w.Reason == WarningCredentialExpired {
					got = append(got, w)
				}
			}
			if tc.reason == "" {
				if len(got) > 0 {
					t.Errorf("unexpected warnings %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Reason != tc.reason || got[0].Cluster != "us" {
				t.Fatalf("want one %s about us, got %+v", tc.reason, got)
			}
			for _, want := range []string{tc.expiry.UTC().Format(time.RFC3339), "kubectl mesh join prod -n team-a --name us", "--refresh"} {
				if !strings.Contains(got[0].Message, want) {
					t.Errorf("message %q lacks %q", got[0].Message, want)
				}
			}
			// Stable while the credential is: the same warning an hour later.
			in.Now = in.Now.Add(time.Hour)
			later := mustCompute(t, in)
			for _, w := range later.View.Warnings {
				if w.Reason == tc.reason && w.Cluster == "us" && !reflect.DeepEqual(w, got[0]) && tc.expiry.After(in.Now) == tc.expiry.After(fixtureNow) {
					t.Errorf("the warning changed with the clock: %q, then %q", got[0].Message, w.Message)
				}
			}
		})
	}
}
