# Builds the server image. Deploy with artifacts/deploy (kustomize).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY pkg pkg
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/kilo-mesh-apiserver ./cmd/kilo-mesh-apiserver

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kilo-mesh-apiserver /kilo-mesh-apiserver
USER 65532:65532
ENTRYPOINT ["/kilo-mesh-apiserver"]
