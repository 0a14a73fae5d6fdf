// Command image assembles the kilo-mesh-apiserver container image without a
// container engine and without pulling anything from a registry: each
// platform's image is one layer on an empty base (the static binary, a
// passwd and group naming the non-root user 65532, and /tmp), and the
// result is an OCI archive: a tarred OCI image layout whose index.json holds
// one image index with every platform. `skopeo copy oci-archive:FILE ...`
// reads it as is; `crane push DIR REF` reads the layout once unpacked (what
// `make push` does).
//
// Every timestamp is --created (the Makefile passes the commit time), and
// files are written in a fixed order, so the same binaries give the same
// archive, byte for byte.
//
//	image --binary linux/amd64=PATH --binary linux/arm64=PATH --rootfs DIR \
//	  --version v0.1.0 --revision SHA --created 2026-01-02T15:04:05Z --output FILE
package main

import (
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the uid:gid the image runs as; the manifests in artifacts/deploy
// and the Dockerfile say the same.
const User = "65532:65532"

// BinaryPath is where the server binary lives in the image.
const BinaryPath = "/kilo-mesh-apiserver"

type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok || !strings.HasPrefix(platform, "linux/") {
		return fmt.Errorf("want linux/ARCH=PATH, got %q", v)
	}
	if _, dup := b[platform]; dup {
		return fmt.Errorf("platform %s given twice", platform)
	}
	b[platform] = path
	return nil
}

type options struct {
	binaries binaries
	rootfs   string
	version  string
	revision string
	source   string
	created  time.Time
	output   string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("image: ")
	o := options{binaries: binaries{}}
	var created string
	flag.Var(o.binaries, "binary", "linux/ARCH=PATH of a static kilo-mesh-apiserver binary; repeat for each platform")
	flag.StringVar(&o.rootfs, "rootfs", "", "directory whose files (etc/passwd, etc/group) go into every image")
	flag.StringVar(&o.version, "version", "", "product version (image label and the layout's ref.name)")
	flag.StringVar(&o.revision, "revision", "", "git commit of the source (image label)")
	flag.StringVar(&o.source, "source", "https://github.com/kilo-mesh/kilo-mesh-apiserver", "source repository (image label)")
	flag.StringVar(&created, "created", "", "RFC 3339 time of every timestamp in the image (the commit time, for reproducible builds)")
	flag.StringVar(&o.output, "output", "", "the OCI archive to write")
	flag.Parse()
	if flag.NArg() > 0 || len(o.binaries) == 0 || o.output == "" || o.version == "" || created == "" {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if o.created, err = time.Parse(time.RFC3339, created); err != nil {
		log.Fatalf("--created: %v", err)
	}
	o.created = o.created.UTC()
	start := time.Now()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
	fi, err := os.Stat(o.output)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s (%.1f MiB, %d platforms) in %s", o.output, float64(fi.Size())/(1<<20), len(o.binaries), time.Since(start).Round(time.Millisecond))
}

func run(o options) error {
	extra, err := readRootfs(o.rootfs)
	if err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	// A fixed order keeps the index, and so its digest, reproducible.
	for _, platform := range slices.Sorted(maps.Keys(o.binaries)) {
		arch := strings.TrimPrefix(platform, "linux/")
		img, err := platformImage(o, arch, o.binaries[platform], extra)
		if err != nil {
			return fmt.Errorf("%s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	dir, err := os.MkdirTemp(filepath.Dir(o.output), ".image-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := l.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": o.version,
	})); err != nil {
		return fmt.Errorf("writing the image index: %w", err)
	}
	return writeArchive(dir, o.output, o.created)
}

// platformImage is the image of one architecture: one layer on an empty
// base, OCI media types, labels naming version and commit.
func platformImage(o options, arch, binary string, extra []file) (v1.Image, error) {
	if err := checkStatic(binary, arch); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	files := append(baseFiles(extra), file{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, data: data})
	layer, err := newLayer(files, o.created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: o.created}, CreatedBy: "hack/tools/image", Comment: "kilo-mesh-apiserver " + o.version},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: o.created}
	cfg.Author = ""
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{BinaryPath}
	cfg.Config.Cmd = nil
	cfg.Config.Env = nil
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "kilo-mesh-apiserver",
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.created":  o.created.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	return mutate.ConfigFile(img, cfg)
}
