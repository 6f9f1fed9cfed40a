# A small image of v6lab for runs against real hosts and for merging
# (deploy/kubernetes, docs/distributed.md). v6lab is pure Go: a static
# binary on distroless, running as its nonroot user. The lab needs root
# and namespaces of the host, so it is not what this image is for.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/v6lab ./cmd/v6lab

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/v6lab /usr/local/bin/v6lab
USER nonroot
ENTRYPOINT ["/usr/local/bin/v6lab"]
