# The server image for those who have a Docker engine (`make docker-image`).
# `make image` builds the same image without one: the same static binary
# (same build flags, version stamped the same way), the same files from
# hack/image-rootfs, the same user 65532 on an empty base.
# Deploy with artifacts/deploy (kustomize).
FROM golang:1.26 AS build
ARG VERSION=v0.0.0-unknown
ARG GIT_COMMIT=unknown
ARG BUILD_DATE=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY pkg pkg
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w \
        -X github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version.gitVersion=${VERSION} \
        -X github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version.gitCommit=${GIT_COMMIT} \
        -X github.com/kilo-mesh/kilo-mesh-apiserver/pkg/version.buildDate=${BUILD_DATE}" \
      -o /rootfs/kilo-mesh-apiserver ./cmd/kilo-mesh-apiserver
COPY hack/image-rootfs/ /rootfs/
RUN mkdir -p /rootfs/tmp && chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/kilo-mesh-apiserver"]
