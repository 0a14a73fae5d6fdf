# kilo-mesh-apiserver. `make run` starts a local demo, `make test` runs every test.
GO        ?= go
BIN_DIR   ?= bin
IMAGE     ?= kilo-mesh-apiserver:latest
# Integration and e2e tests start real kube-apiservers and etcd; they take a
# few minutes on two cores.
TEST_TIMEOUT ?= 30m

.PHONY: all build run tools test test-unit test-integration test-e2e test-dataplane verify generate bench image clean

all: build

build:
	$(GO) build -o $(BIN_DIR)/kilo-mesh-apiserver ./cmd/kilo-mesh-apiserver

# Real kube-apiserver, etcd and kubectl v1.36.3, built once from the Go module proxy.
tools:
	bash hack/build-tools.sh

# Built, then run, so that Ctrl-C reaches the demo itself and it exits cleanly.
run: tools
	$(GO) build -o $(BIN_DIR)/localenv ./hack/localenv
	exec $(BIN_DIR)/localenv

test: verify test-unit test-integration test-e2e test-dataplane

# Pure logic, plus the storage on an embedded etcd in the test process.
test-unit:
	$(GO) test -count=1 ./...

# Packages against real kube-apiservers.
test-integration: tools
	$(GO) test -count=1 -p 1 -tags integration -timeout $(TEST_TIMEOUT) ./pkg/...

# The real server binary behind the aggregation layer, driven with kubectl.
test-e2e: tools
	$(GO) test -count=1 -p 1 -tags e2e -timeout $(TEST_TIMEOUT) ./test/...

# Packets through the Peers: every Kilo node a network namespace running
# userspace WireGuard (test/dataplane). Needs root and iproute2 (it fails,
# saying so, without them); -v prints the connectivity matrices and the
# recovery times.
test-dataplane: tools
	$(GO) test -count=1 -p 1 -v -tags dataplane -timeout $(TEST_TIMEOUT) ./test/dataplane/...

verify:
	@test -z "$$(gofmt -l cmd pkg hack test)" || { gofmt -l cmd pkg hack test; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) vet -tags e2e ./...
	$(GO) vet -tags dataplane ./...
	bash hack/verify-codegen.sh

generate:
	bash hack/update-codegen.sh

# Figures for docs/performance.md; the last two start real kube-apiservers.
bench:
	bash hack/bench-planner.sh
	bash hack/bench-views.sh
	bash hack/bench-reconciler.sh

# Needs a Docker engine; the machines this project is developed on have none.
image:
	docker build -t $(IMAGE) .

clean:
	rm -rf $(BIN_DIR) _output
