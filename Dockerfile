# wasmsched on a distroless base. The builtin Wasm bundles are embedded,
# so the image needs nothing else; user modules come from a ConfigMap or
# volume named in the profiles file.
#
#   docker build -t wasmsched:dev .                        # the release image
#   docker build --build-arg RUNTIME=wazero -t wasmsched:dev .   # static, pure Go
#
# RUNTIME=wasmtime (the default) builds the release binary, the one
# `make build` builds: cgo and -tags wasmtime, so modules run on wasmtime
# (Cranelift-compiled code, measurably closer to native than wazero:
# docs/PERFORMANCE.md) unless `serve --runtime wazero` or a module entry
# says otherwise. It links glibc dynamically, so it runs on
# distroless/cc-debian12 (glibc 2.36 and libgcc_s). The build stage is
# Debian 12 (bookworm) too, so the binary asks for no newer glibc than
# the base has; scripts/check-release.sh checks both on the binary the
# same script builds. RUNTIME=wazero builds the static pure-Go binary
# (wazero only) on distroless/static-debian12.
#
# wasmsched:dev is the image the Helm chart (deploy/helm/wasmsched) and
# deploy/wasmsched.yaml name, with imagePullPolicy IfNotPresent: load it
# into the cluster's nodes (kind load docker-image wasmsched:dev, or
# docker save wasmsched:dev | ctr -n k8s.io images import - on each node),
# no registry needed. README "Running in a cluster".
ARG RUNTIME=wasmtime

FROM golang:1.26-bookworm AS build
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
ARG RUNTIME
# The one definition of the release build (make build runs it too).
RUN VERSION=${VERSION} REVISION=${REVISION} REVISION_TIME=${REVISION_TIME} MODIFIED=${MODIFIED} \
    scripts/build-release.sh /out/wasmsched ${RUNTIME}

# The base for each build: glibc for the wasmtime build, static for wazero.
FROM gcr.io/distroless/cc-debian12:nonroot AS base-wasmtime
FROM gcr.io/distroless/static-debian12:nonroot AS base-wazero

FROM base-${RUNTIME}
COPY --from=build /out/wasmsched /usr/local/bin/wasmsched
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/wasmsched"]
CMD ["serve"]
