package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is one entry of the image's only layer, owned by root.
type file struct {
	name string // relative, slash-separated; a trailing slash makes a directory
	mode int64
	data []byte
}

// baseFiles are what every image holds besides the binary: the rootfs
// files and a world-writable, sticky /tmp (for running without the
// manifests' emptyDir there).
func baseFiles(rootfs []file) []file {
	files := []file{{name: "tmp/", mode: 0o1777}}
	return append(files, rootfs...)
}

// readRootfs reads every regular file under dir, with its directories, in
// lexical order; modes are normalised (0755 directories, 0644 files) so that
// a checkout's umask does not change the image.
func readRootfs(dir string) ([]file, error) {
	if dir == "" {
		return nil, nil
	}
	var files []file
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			files = append(files, file{name: rel + "/", mode: 0o755})
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files = append(files, file{name: rel, mode: 0o644, data: data})
		default:
			return fmt.Errorf("%s: only regular files and directories belong in the rootfs", path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the rootfs %s: %w", dir, err)
	}
	return files, nil
}

// newLayer tars files (sorted, every time stamp mtime, owner root) and
// gzips them; the result is the same for the same input. gzip's default
// level: -9 takes more than twice as long for 1% less.
func newLayer(files []file, mtime time.Time) (v1.Layer, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			ModTime: mtime,
		}
		if strings.HasSuffix(f.name, "/") {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStatic refuses a binary for another architecture or one that needs
// a dynamic loader: the image has none.
func checkStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s as an ELF binary: %w", path, err)
	}
	defer f.Close()
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("unknown architecture %q", arch)
	}
	if f.Machine != want {
		return fmt.Errorf("%s is built for %s, not %s", path, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// writeArchive tars the layout in dir into output (through a temporary
// file and a rename, so a failed run never leaves a partial archive).
func writeArchive(dir, output string, mtime time.Time) error {
	tmp, err := os.CreateTemp(filepath.Dir(output), ".image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	tw := tar.NewWriter(tmp)
	// WalkDir visits in lexical order.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", output, err)
	}
	return os.Rename(tmp.Name(), output)
}
