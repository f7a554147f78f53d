# syntax=docker/dockerfile:1
#
# envelope exporter image: a static binary on distroless, running as the
# distroless "nonroot" user (65532). Build from the repository root:
#
#   docker build -t envelope-exporter .
#   docker run --rm -p 19466:19466 envelope-exporter
#
# VERSION and REVISION end up in envelope_exporter_build_info and --version.
# TAGS chooses the binary (docs/builds.md): by default the serve-only build
# without the CloudWatch collector, the smallest, for sidecars and OTLP
# receivers; TAGS=serveonly adds CloudWatch polling (the central ECS
# exporter); TAGS= builds every command.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first so the download layer is cached across source edits.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.1.0-dev
ARG REVISION=unknown
ARG TAGS=serveonly,nocloudwatch
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -tags "${TAGS}" \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=docker" \
      -o /out/exporter ./cmd/exporter

# distroless/static carries CA certificates (for CloudWatch and OTLP push
# over TLS), tzdata and /etc/passwd with the nonroot user, and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/exporter /bin/exporter
USER 65532:65532
EXPOSE 19466
ENTRYPOINT ["/bin/exporter"]
CMD ["serve"]
