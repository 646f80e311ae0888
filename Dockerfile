# wasmsched: a static binary on a distroless base. The builtin Wasm
# bundle is embedded, so the image needs nothing else; user modules come
# from a ConfigMap or volume named in the profiles file.
#
#   docker build -t wasmsched:dev .
#
# wasmsched:dev is the image the Helm chart (deploy/helm/wasmsched) and
# deploy/wasmsched.yaml name, with imagePullPolicy IfNotPresent: load it
# into the cluster's nodes (kind load docker-image wasmsched:dev, or
# docker save wasmsched:dev | ctr -n k8s.io images import - on each node),
# no registry needed. README "Running in a cluster".
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY abi/go.mod abi/
COPY guest-sdk/go.mod guest-sdk/
COPY plugins-wasm/go.mod plugins-wasm/
RUN go mod download
COPY . .
# What `wasmsched version` reports: .git is not in the build context, so
# pass the checkout's (docker build --build-arg REVISION=$(git rev-parse HEAD) ...;
# the Makefile's VERSION, REVISION, REVISION_TIME and MODIFIED say how).
ARG VERSION=
ARG REVISION=
ARG REVISION_TIME=
ARG MODIFIED=
# wazero is pure Go: no cgo, so the binary runs on a static base.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION} -X main.revision=${REVISION} -X main.revisionTime=${REVISION_TIME} -X main.modified=${MODIFIED}" -o /out/wasmsched ./cmd/wasmsched

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/wasmsched /usr/local/bin/wasmsched
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/wasmsched"]
CMD ["serve"]
