# syntax=docker/dockerfile:1
#
# Two images from one Dockerfile, each a static binary on distroless,
# running as the distroless "nonroot" user (65532). Build from the
# repository root:
#
#   docker build -t envelope-exporter .                 # the exporter daemon (default)
#   docker run --rm -p 19466:19466 envelope-exporter
#   docker build --target cli -t envelope .             # the envelope command line, for CI
#   docker run --rm -v "$PWD:/work" -w /work envelope compare --envelope envelope.yaml run.ndjson.gz
#
# VERSION and REVISION end up in envelope_exporter_build_info and --version.
# TAGS chooses the exporter's build (docs/builds.md): by default without
# the CloudWatch collector, the smallest, for sidecars and OTLP receivers;
# TAGS= adds CloudWatch polling (the central ECS exporter).

ARG VERSION=0.1.0-dev
ARG REVISION=unknown

FROM golang:1.26 AS source
WORKDIR /src
# Modules first so the download layer is cached across source edits.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION
ARG REVISION
ENV CGO_ENABLED=0 GOOS=linux GOFLAGS=-trimpath \
    LDFLAGS="-s -w \
      -X github.com/prometheus/common/version.Version=${VERSION} \
      -X github.com/prometheus/common/version.Revision=${REVISION} \
      -X github.com/prometheus/common/version.Branch=docker"

FROM source AS build-cli
RUN go build -ldflags "${LDFLAGS}" -o /out/envelope ./cmd/envelope

# The envelope command line: baseline, report, compare, rules,
# dashboards, history and the rest, for CI pipelines.
FROM gcr.io/distroless/static-debian12:nonroot AS cli
COPY --from=build-cli /out/envelope /bin/envelope
USER 65532:65532
ENTRYPOINT ["/bin/envelope"]
CMD ["--help"]

FROM source AS build
ARG TAGS=nocloudwatch
RUN go build -tags "${TAGS}" -ldflags "${LDFLAGS}" -o /out/exporter ./cmd/exporter

# The exporter daemon, the default target. distroless/static carries CA
# certificates (for CloudWatch and OTLP push over TLS), tzdata and
# /etc/passwd with the nonroot user, and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/exporter /bin/exporter
USER 65532:65532
EXPOSE 19466
ENTRYPOINT ["/bin/exporter"]
CMD ["serve"]
