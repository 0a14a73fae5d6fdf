package version

import "testing"

func TestFillFromBuildInfo(t *testing.T) {
	stamped := Info{Version: "v0.1.0", Commit: "abc", BuildDate: "2026-11-22T00:00:00Z"}
	tests := []struct {
		name                    string
		in                      Info
		module, revision, vtime string
		modified                bool
		want                    Info
	}{
		{name: "stamped by the Makefile", in: stamped, module: "(devel)", revision: "zzz", want: stamped},
		{
			name: "go build in a checkout", module: "(devel)", revision: "0123456789abcdef0123", vtime: "2026-11-21T10:00:00Z",
			want: Info{Version: "v0.0.0-0123456789ab", Commit: "0123456789abcdef0123", BuildDate: "2026-11-21T10:00:00Z"},
		},
		{
			name: "go build with local changes", module: "(devel)", revision: "0123456789abcdef0123", modified: true,
			want: Info{Version: "v0.0.0-0123456789ab-dirty", Commit: "0123456789abcdef0123", BuildDate: "unknown"},
		},
		{
			name: "go install of a tagged module", module: "v0.1.0",
			want: Info{Version: "v0.1.0", Commit: "unknown", BuildDate: "unknown"},
		},
		{name: "nothing known", want: Info{Version: "v0.0.0-unknown", Commit: "unknown", BuildDate: "unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fillFromBuildInfo(tt.in, tt.module, tt.revision, tt.modified, tt.vtime); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
