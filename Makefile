# kilo-mesh-apiserver. `make run` starts a local demo, `make test` runs every test.
GO        ?= go
BIN_DIR   ?= bin
OUTPUT    ?= _output
# Where `make push` uploads the image: registry/name:tag.
IMAGE     ?=
PLATFORMS ?= linux/amd64 linux/arm64
# Integration and e2e tests start real kube-apiservers and etcd; they take a
# few minutes on two cores.
TEST_TIMEOUT ?= 30m

# The product's version, stamped into pkg/version (never into
# component-base's, which must stay the Kubernetes version). Override on the
# command line: make image VERSION=v0.1.0.
VERSION    := $(shell hack/version.sh)
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit time rather than the clock: one commit gives the same binaries
# and the same image archive, byte for byte.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
BUILD_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r $(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version
LDFLAGS := -s -w -X $(VERSION_PKG).gitVersion=$(VERSION) -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)
# Static, path-free binaries; the Dockerfile builds with the same flags.
GO_BUILD := CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "$(LDFLAGS)"

IMAGE_ARCHIVE := $(OUTPUT)/kilo-mesh-apiserver-image.tar
# Build tools (crane, the image assembler) from their own module, hack/tools.
TOOLS_BIN := $(CURDIR)/hack/tools/bin
TOOLS_GO  := cd hack/tools && GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false" $(GO)

.PHONY: all build run tools test test-unit test-integration test-e2e test-dataplane verify generate bench image push crane docker-image plugin-release chart manifests clean

all: build

# The server, and the kubectl plugin (bin/kubectl-mesh: `kubectl mesh` once
# bin is on PATH).
build:
	$(GO_BUILD) -o $(BIN_DIR)/kilo-mesh-apiserver ./cmd/kilo-mesh-apiserver
	$(GO_BUILD) -o $(BIN_DIR)/kubectl-mesh ./cmd/kubectl-mesh
	install -m 0755 cmd/kubectl-mesh/kubectl_complete-mesh $(BIN_DIR)/

# Real kube-apiserver, kube-controller-manager, etcd and kubectl v1.36.3,
# Helm (for the chart's tests and make chart) and CoreDNS (for the tests of
# kubectl mesh dns and of names across the data plane), built once from the
# Go module proxy; each target builds only the ones it uses (ENV_TOOLS: what
# test/framework starts).
BUILD_TOOLS := bash hack/build-tools.sh
ENV_TOOLS   := etcd kube-apiserver kube-controller-manager kubectl
tools:
	$(BUILD_TOOLS)

# Each test target builds the tools its own tests use and hands them a
# directory holding links to those alone (KILO_MESH_TOOLS_BIN), so that a
# test using a tool its target does not build fails everywhere, not only on
# a machine that never built it. Helm: pkg/member's and test/install's
# chart tests; CoreDNS: kubectl mesh dns (test/e2e/plugin) and names across
# the data plane. Before that, hack/host-deps.sh checks the machine's packages
# (and root) and names whatever is missing in one message.
INTEGRATION_TOOLS := $(ENV_TOOLS) helm
E2E_TOOLS         := $(ENV_TOOLS) helm coredns
DATAPLANE_TOOLS   := $(ENV_TOOLS) coredns
TEST_TOOLS_DIR    := $(CURDIR)/$(OUTPUT)/test-tools
HOST_DEPS         := bash hack/host-deps.sh
# Extra flags for go test, e.g. make test-e2e GOTEST_FLAGS='-run TestTenantSafety'.
GOTEST_FLAGS ?=

# Built, then run, so that Ctrl-C reaches the demo itself and it exits cleanly.
# RUN_FLAGS go to the demo, e.g. make run RUN_FLAGS=--clusters=3.
run:
	$(BUILD_TOOLS) $(ENV_TOOLS)
	$(GO_BUILD) -o $(BIN_DIR)/kubectl-mesh ./cmd/kubectl-mesh
	install -m 0755 cmd/kubectl-mesh/kubectl_complete-mesh $(BIN_DIR)/
	$(GO) build -o $(BIN_DIR)/localenv ./hack/localenv
	exec $(BIN_DIR)/localenv $(RUN_FLAGS)

# The machine is checked for every part first, so that a missing package
# fails the run at once rather than after the parts before it.
test: host-test verify test-unit test-integration test-e2e test-dataplane

# host-TARGET checks the machine for TARGET's tests.
host-%:
	@$(HOST_DEPS) $*

# Pure logic, plus the storage on an embedded etcd in the test process.
test-unit: host-unit
	@rm -rf $(TEST_TOOLS_DIR)/unit
	KILO_MESH_TOOLS_BIN=$(TEST_TOOLS_DIR)/unit $(GO) test -count=1 $(GOTEST_FLAGS) ./...

# Packages against real kube-apiservers.
test-integration: host-integration
	$(BUILD_TOOLS) --link $(TEST_TOOLS_DIR)/integration $(INTEGRATION_TOOLS)
	KILO_MESH_TOOLS_BIN=$(TEST_TOOLS_DIR)/integration \
		$(GO) test -count=1 -p 1 -tags integration -timeout $(TEST_TIMEOUT) $(GOTEST_FLAGS) ./pkg/...

# The real server binary behind the aggregation layer, driven with kubectl;
# test/install runs the binary taken out of the image archive, the other
# packages the same static binary (so it is built once).
HOST_ARCH := $(shell $(GO) env GOARCH)
test-e2e: host-e2e image
	$(BUILD_TOOLS) --link $(TEST_TOOLS_DIR)/e2e $(E2E_TOOLS)
	KILO_MESH_TOOLS_BIN=$(TEST_TOOLS_DIR)/e2e KILO_MESH_IMAGE_ARCHIVE=$(CURDIR)/$(IMAGE_ARCHIVE) \
		KILO_MESH_APISERVER_BIN=$(CURDIR)/$(OUTPUT)/bin/linux_$(HOST_ARCH)/kilo-mesh-apiserver \
		$(GO) test -count=1 -p 1 -tags e2e -timeout $(TEST_TIMEOUT) $(GOTEST_FLAGS) ./test/...

# Packets through the Peers: every Kilo node a network namespace running
# userspace WireGuard (test/dataplane). Needs root, iproute2 and nftables
# (checked first); -v prints the connectivity matrices and the recovery
# times.
test-dataplane: host-dataplane
	$(BUILD_TOOLS) --link $(TEST_TOOLS_DIR)/dataplane $(DATAPLANE_TOOLS)
	KILO_MESH_TOOLS_BIN=$(TEST_TOOLS_DIR)/dataplane \
		$(GO) test -count=1 -p 1 -v -tags dataplane -timeout $(TEST_TIMEOUT) $(GOTEST_FLAGS) ./test/dataplane/...

verify: host-verify
	@test -z "$$(gofmt -l cmd pkg hack test)" || { gofmt -l cmd pkg hack test; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) vet -tags e2e ./...
	$(GO) vet -tags dataplane ./...
	$(TOOLS_GO) vet ./image
	bash hack/verify-codegen.sh

generate:
	bash hack/update-codegen.sh

# Figures for docs/performance.md; the last two start real kube-apiservers.
bench:
	bash hack/bench-planner.sh
	bash hack/bench-views.sh
	bash hack/bench-reconciler.sh

# The server image for $(PLATFORMS), without a container engine and without
# pulling anything: static binaries on an empty base, user 65532, assembled
# by hack/tools/image into an OCI archive (a tarred OCI layout whose index
# holds every platform). `skopeo copy oci-archive:$(IMAGE_ARCHIVE) ...` takes
# it as is; `make push` uploads it with crane.
image:
	@mkdir -p $(OUTPUT)
	@for p in $(PLATFORMS); do \
		echo "go build $$p ($(VERSION))"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO_BUILD) -o $(OUTPUT)/bin/$${p%/*}_$${p#*/}/kilo-mesh-apiserver ./cmd/kilo-mesh-apiserver || exit 1; \
	done
	$(TOOLS_GO) build -o $(TOOLS_BIN)/image ./image
	$(TOOLS_BIN)/image --rootfs hack/image-rootfs --version $(VERSION) --revision $(GIT_COMMIT) --created $(BUILD_DATE) \
		--output $(IMAGE_ARCHIVE) $(foreach p,$(PLATFORMS),--binary $(p)=$(OUTPUT)/bin/$(subst /,_,$(p))/kilo-mesh-apiserver)

crane:
	$(TOOLS_GO) build -o $(TOOLS_BIN)/crane github.com/google/go-containerregistry/cmd/crane

# crane reads an OCI layout from a directory, so the archive is unpacked
# first. Credentials: crane auth login, or a Docker config.json.
push: image crane
	@case "$(IMAGE)" in */*) ;; *) echo "make push needs IMAGE=registry/name:tag, e.g. IMAGE=ghcr.io/you/kilo-mesh-apiserver:$(VERSION)" >&2; exit 1;; esac
	rm -rf $(OUTPUT)/image-layout && mkdir -p $(OUTPUT)/image-layout
	tar -xf $(IMAGE_ARCHIVE) -C $(OUTPUT)/image-layout
	$(TOOLS_BIN)/crane push $(OUTPUT)/image-layout $(IMAGE)

# For those with a Docker engine: the same binary and user, from the Dockerfile.
docker-image:
	docker build --build-arg VERSION=$(VERSION) --build-arg GIT_COMMIT=$(GIT_COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) \
		-t $(or $(IMAGE),kilo-mesh-apiserver:$(VERSION)) .

# The plugin's release archives and its filled-in krew manifest, in
# _output/plugin: make plugin-release VERSION=v0.1.0
plugin-release:
	bash hack/plugin-release.sh $(VERSION)

# The Helm charts (artifacts/charts) as packages in _output/charts, stamped
# with the release: make chart VERSION=v0.1.0 gives chart version 0.1.0
# whose default image tag is v0.1.0, the tag make push uploads.
CHART_VERSION ?= $(patsubst v%,%,$(VERSION))
chart:
	@mkdir -p $(OUTPUT)/charts
	@helm=$$($(BUILD_TOOLS) helm | tail -n 1)/helm; \
	for c in kilo-mesh-apiserver kilo-mesh-member; do \
		$$helm lint --strict artifacts/charts/$$c && \
		$$helm package artifacts/charts/$$c --destination $(OUTPUT)/charts --version $(CHART_VERSION) --app-version $(VERSION) || exit 1; \
	done

# Every kustomize install mode rendered with IMAGE, one file each in
# _output/manifests, for a release: make manifests IMAGE=registry/name:tag
manifests:
	bash hack/release-manifests.sh $(IMAGE)

clean:
	rm -rf $(BIN_DIR) $(OUTPUT) hack/tools/bin
