//go:build e2e

package install

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImageArchive checks what `make image` promises: both platforms in one
// index, a static binary of the right architecture on an empty base, user
// 65532, version labels.
func TestImageArchive(t *testing.T) {
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(archive.Platforms, want) {
		t.Errorf("platforms %v, want %v", archive.Platforms, want)
	}
	if !strings.HasPrefix(archive.RefName, "v") {
		t.Errorf("ref.name %q, want the version", archive.RefName)
	}
	machines := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}
	for _, platform := range archive.Platforms {
		t.Run(platform, func(t *testing.T) {
			img, err := archive.Image(platform)
			if err != nil {
				t.Fatal(err)
			}
			c := img.Config
			if c.OS+"/"+c.Architecture != platform {
				t.Errorf("config says %s/%s", c.OS, c.Architecture)
			}
			if c.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", c.Config.User)
			}
			if !slices.Equal(c.Config.Entrypoint, []string{"/kilo-mesh-apiserver"}) {
				t.Errorf("entrypoint %v", c.Config.Entrypoint)
			}
			if v := c.Config.Labels["org.opencontainers.image.version"]; v != archive.RefName {
				t.Errorf("version label %q, ref.name %q", v, archive.RefName)
			}
			if len(c.Config.Labels["org.opencontainers.image.revision"]) != 40 {
				t.Errorf("revision label %q, want a commit", c.Config.Labels["org.opencontainers.image.revision"])
			}
			var names []string
			for name := range img.Files {
				names = append(names, name)
			}
			slices.Sort(names)
			// An empty base: nothing but these.
			if want := []string{"/etc/", "/etc/group", "/etc/passwd", "/kilo-mesh-apiserver", "/tmp/"}; !slices.Equal(names, want) {
				t.Errorf("files %v, want %v", names, want)
			}
			if !bytes.Contains(img.Files["/etc/passwd"].Data, []byte(":65532:65532:")) {
				t.Errorf("/etc/passwd does not name user 65532:\n%s", img.Files["/etc/passwd"].Data)
			}
			if m := img.Files["/tmp/"].Mode; m != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777", m)
			}
			bin := img.Files["/kilo-mesh-apiserver"]
			if bin.Mode != 0o755 {
				t.Errorf("binary mode %o, want 755", bin.Mode)
			}
			f, err := elf.NewFile(bytes.NewReader(bin.Data))
			if err != nil {
				t.Fatal(err)
			}
			if f.Machine != machines[platform] {
				t.Errorf("binary for %s", f.Machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("the binary needs a dynamic loader; the image has none")
				}
			}
		})
	}
}

// TestVersionAndStrayArguments: --version prints the image's version; a
// stray word is refused before anything is created.
func TestVersionAndStrayArguments(t *testing.T) {
	out, err := exec.Command(imageBinary, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "kilo-mesh-apiserver "+archive.RefName+" (commit ") {
		t.Errorf("--version printed %q, want version %s", out, archive.RefName)
	}
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	cmd := exec.Command(imageBinary, "version", "--data-dir="+dataDir)
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("`kilo-mesh-apiserver version` succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "takes no arguments") || !strings.Contains(string(out), "--version") {
		t.Errorf("`kilo-mesh-apiserver version` said %q, want a pointer to --version", out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused start left %d entries in its directory (e.g. %s)", len(entries), entries[0].Name())
	}
}
