# syntax=docker/dockerfile:1
# KQueen's image, for those with a container builder and a registry:
#   docker build -t kqueen:latest .
# Machines that reach no registry build the same layout from files with
# `make image-offline` (testkit's node_lab::kqueen_image; the tests run that one on a real
# kubelet). Keep the two layouts equal: core/tests/deploy_manifests.rs compares them.

# 1. Build: the server binary (profile `production`: link-time optimised, pages ~30-45 %
#    cheaper than `make run`'s `serve` build) and the release site bundle, with the
#    project's own setup script (protoc, the wasm32 std, wasm-bindgen, wasm-opt).
FROM rust:1-bookworm AS build
WORKDIR /src
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm \
 && rm -rf /var/lib/apt/lists/*
COPY . .
RUN scripts/setup.sh run \
 && scripts/build-site.sh --release \
 && cargo build -p kqueen-server --profile production \
 && mkdir -p /out && cp target/production/kqueen /out/kqueen && cp -r target/site /out/site

# 2. Run: glibc and the CA certificates, the binary, the site; not root; nothing writable
#    but the volumes the manifests mount (/var/lib/kqueen, /tmp).
FROM debian:bookworm-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 kqueen \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/kqueen --no-create-home \
      --shell /sbin/nologin kqueen \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/kqueen
COPY --from=build /out/kqueen /usr/local/bin/kqueen
COPY --from=build /out/site /usr/share/kqueen/site
ENV KQUEEN_SITE_ROOT=/usr/share/kqueen/site \
    KQUEEN_DATA_DIR=/var/lib/kqueen \
    KQUEEN_LISTEN=0.0.0.0:3000
USER 10001:10001
VOLUME /var/lib/kqueen
EXPOSE 3000
ENTRYPOINT ["/usr/local/bin/kqueen"]
CMD ["serve"]
