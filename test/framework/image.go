package framework

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ImageArchiveEnv names an environment variable pointing at the OCI archive
// of `make image`; default <repo>/_output/kilo-mesh-apiserver-image.tar.
const ImageArchiveEnv = "KILO_MESH_IMAGE_ARCHIVE"

// OCI media types the archive uses.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
)

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform,omitempty"`
}

type ociIndex struct {
	MediaType string          `json:"mediaType"`
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	MediaType string          `json:"mediaType"`
	Config    ociDescriptor   `json:"config"`
	Layers    []ociDescriptor `json:"layers"`
}

// ImageConfig is the part of an image's configuration the tests check.
type ImageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// Image is one platform's image of an OCI archive.
type Image struct {
	Platform string // os/arch
	Config   ImageConfig
	// Files are the regular files of its layers, by path, with their mode.
	Files map[string]ImageFile
}

// ImageFile is a file in an image.
type ImageFile struct {
	Mode int64
	Data []byte
}

// ImageArchive is an OCI archive as `make image` writes it: a tarred OCI
// layout whose index.json holds one image index with every platform.
type ImageArchive struct {
	Path string
	// RefName is the layout's org.opencontainers.image.ref.name.
	RefName string
	// IndexDigest is the digest of the image index (what a registry
	// reports for the pushed tag).
	IndexDigest string
	// Platforms lists os/arch of the index, in its order.
	Platforms []string

	blobs map[string][]byte // by digest
	index ociIndex
}

// ImageArchivePath returns $KILO_MESH_IMAGE_ARCHIVE, else the repository's
// _output/kilo-mesh-apiserver-image.tar.
func ImageArchivePath() (string, error) {
	if p := os.Getenv(ImageArchiveEnv); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "_output", "kilo-mesh-apiserver-image.tar"), nil
}

// ReadImageArchive reads and checks an OCI archive: every blob matches its
// digest, and index.json names exactly one image index.
func ReadImageArchive(path string) (*ImageArchive, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: build it with `make image` (or set %s)", path, ImageArchiveEnv)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a := &ImageArchive{Path: path, blobs: map[string][]byte{}}
	var indexJSON, layoutJSON []byte
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		switch name := strings.TrimPrefix(hdr.Name, "./"); {
		case name == "index.json":
			indexJSON = data
		case name == "oci-layout":
			layoutJSON = data
		case strings.HasPrefix(name, "blobs/sha256/"):
			digest := "sha256:" + strings.TrimPrefix(name, "blobs/sha256/")
			if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != digest {
				return nil, fmt.Errorf("%s: blob %s does not match its digest", path, name)
			}
			a.blobs[digest] = data
		}
	}
	if !bytes.Contains(layoutJSON, []byte(`"imageLayoutVersion"`)) {
		return nil, fmt.Errorf("%s: no oci-layout file: not an OCI archive", path)
	}
	var top ociIndex
	if err := json.Unmarshal(indexJSON, &top); err != nil {
		return nil, fmt.Errorf("%s: index.json: %w", path, err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != mediaTypeIndex {
		return nil, fmt.Errorf("%s: index.json should name one image index, names %+v", path, top.Manifests)
	}
	a.RefName = top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
	a.IndexDigest = top.Manifests[0].Digest
	if err := a.readJSON(top.Manifests[0].Digest, &a.index); err != nil {
		return nil, err
	}
	for _, m := range a.index.Manifests {
		if m.Platform == nil || m.MediaType != mediaTypeManifest {
			return nil, fmt.Errorf("%s: index entry %s is not a platform image manifest", path, m.Digest)
		}
		a.Platforms = append(a.Platforms, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	return a, nil
}

func (a *ImageArchive) readJSON(digest string, v any) error {
	data, ok := a.blobs[digest]
	if !ok {
		return fmt.Errorf("%s: blob %s is missing", a.Path, digest)
	}
	return json.Unmarshal(data, v)
}

// Image returns the image of platform (os/arch), with its files.
func (a *ImageArchive) Image(platform string) (*Image, error) {
	for _, d := range a.index.Manifests {
		if d.Platform.OS+"/"+d.Platform.Architecture != platform {
			continue
		}
		var m ociManifest
		if err := a.readJSON(d.Digest, &m); err != nil {
			return nil, err
		}
		img := &Image{Platform: platform, Files: map[string]ImageFile{}}
		if err := a.readJSON(m.Config.Digest, &img.Config); err != nil {
			return nil, err
		}
		for _, l := range m.Layers {
			if err := a.readLayer(l.Digest, img.Files); err != nil {
				return nil, err
			}
		}
		return img, nil
	}
	return nil, fmt.Errorf("%s has no image for %s (it has %v)", a.Path, platform, a.Platforms)
}

func (a *ImageArchive) readLayer(digest string, files map[string]ImageFile) error {
	zr, err := gzip.NewReader(bytes.NewReader(a.blobs[digest]))
	if err != nil {
		return fmt.Errorf("layer %s: %w", digest, err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("layer %s: %w", digest, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		files["/"+strings.TrimPrefix(hdr.Name, "/")] = ImageFile{Mode: hdr.Mode, Data: data}
	}
}

// HostPlatform is linux/<GOARCH> of the test process.
func HostPlatform() string { return "linux/" + runtime.GOARCH }

// ExtractEntrypoint writes the host platform's entrypoint binary from the
// archive into dir and returns its path.
func (a *ImageArchive) ExtractEntrypoint(dir string) (string, error) {
	img, err := a.Image(HostPlatform())
	if err != nil {
		return "", err
	}
	if len(img.Config.Config.Entrypoint) != 1 {
		return "", fmt.Errorf("entrypoint %v: want one binary", img.Config.Config.Entrypoint)
	}
	f, ok := img.Files[img.Config.Config.Entrypoint[0]]
	if !ok {
		return "", fmt.Errorf("the image has no file %s", img.Config.Config.Entrypoint[0])
	}
	path := filepath.Join(dir, filepath.Base(img.Config.Config.Entrypoint[0]))
	if err := os.WriteFile(path, f.Data, 0o755); err != nil {
		return "", err
	}
	return path, nil
}
