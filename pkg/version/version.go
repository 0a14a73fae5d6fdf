// Package version is the product's own version, stamped at build time:
//
//	go build -ldflags "-X github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version.gitVersion=v0.1.0 \
//	  -X github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version.gitCommit=<sha> \
//	  -X github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version.buildDate=<RFC 3339>"
//
// The Makefile (and the Dockerfile) do this from `git describe --tags`. It is
// deliberately separate from k8s.io/component-base/version: that one sets
// the API server's effective and emulation version, which must stay the
// Kubernetes version of the libraries.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X; empty in a plain `go build`.
var (
	gitVersion string
	gitCommit  string
	buildDate  string
)

// Info describes the running binary.
type Info struct {
	// Version is `git describe --tags` of the source (v0.1.0,
	// v0.1.0-3-g1234abcd, v0.0.0-1234abcd before the first tag), with
	// "-dirty" for uncommitted changes.
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the stamped version; without stamps it falls back to what the
// Go toolchain recorded (module version, VCS revision), and says "unknown"
// rather than inventing a release.
func Get() Info {
	info := Info{
		Version:   gitVersion,
		Commit:    gitCommit,
		BuildDate: buildDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info.Version != "" && info.Commit != "" && info.BuildDate != "" {
		return info
	}
	var revision, modified, vcsTime, moduleVersion string
	if bi, ok := debug.ReadBuildInfo(); ok {
		moduleVersion = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			case "vcs.time":
				vcsTime = s.Value
			}
		}
	}
	return fillFromBuildInfo(info, moduleVersion, revision, modified == "true", vcsTime)
}

// fillFromBuildInfo completes what the ldflags left empty.
func fillFromBuildInfo(info Info, moduleVersion, revision string, modified bool, vcsTime string) Info {
	if info.Commit == "" {
		info.Commit = revision
	}
	if info.BuildDate == "" {
		info.BuildDate = vcsTime
	}
	if info.Version == "" {
		switch {
		case moduleVersion != "" && moduleVersion != "(devel)":
			info.Version = moduleVersion
		case revision != "":
			info.Version = "v0.0.0-" + short(revision)
			if modified {
				info.Version += "-dirty"
			}
		default:
			info.Version = "v0.0.0-unknown"
		}
	}
	for _, f := range []*string{&info.Commit, &info.BuildDate} {
		if *f == "" {
			*f = "unknown"
		}
	}
	return info
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// String is the one line `kilo-mesh-apiserver --version` prints.
func (i Info) String() string {
	return fmt.Sprintf("kilo-mesh-apiserver %s (commit %s, built %s, %s, %s)",
		i.Version, i.Commit, i.BuildDate, i.GoVersion, i.Platform)
}

// Header is the response header in which the server sends its Version on
// what it serves under /apis/mesh.kilo.squat.ai/: /version is the host
// kube-apiserver's, so `kubectl mesh version` reads the server's from the
// group's discovery document, which every authenticated user may read.
const Header = "Kilo-Mesh-Apiserver-Version"
