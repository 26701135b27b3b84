# kube-rdma: one image with rdma-device-plugin, rdma-webhook and rdmactl, for manifests/.
#   docker build -t <registry>/kube-rdma:0.1.0 .
#   (cd manifests/overlays/cert-manager && kustomize edit set image kube-rdma=<registry>/kube-rdma:0.1.0)
# The build stage installs exactly what developers and CI build with (scripts/setup.sh); the
# runtime stage gets only the Debian packages that hold the libraries the three programs load.
# Pin the bases by digest (debian:12@sha256:...) for reproducible builds.
ARG DEBIAN=debian:12

FROM ${DEBIAN} AS build
WORKDIR /src
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
# The build type scripts/build.sh and CI use (-O2); the binaries are stripped below.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKUBE_RDMA_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target rdma-device-plugin rdma-webhook rdmactl
# The stripped binaries, and the packages that own the shared libraries they link. libibverbs
# loads its hardware drivers (libmlx5, ...) with dlopen(), which ldd cannot see: hence
# ibverbs-providers, without which rdma-core finds no device on a real node.
RUN set -eu; \
    mkdir -p /out/usr/bin; \
    for program in rdma-device-plugin rdma-webhook rdmactl; do \
      binary=$(find /build -type f -name "$program" -perm -u+x | head -n 1); \
      [ -n "$binary" ] || { echo "Dockerfile: $program was not built" >&2; exit 1; }; \
      install -m 0755 -s "$binary" "/out/usr/bin/$program"; \
    done; \
    ldd /out/usr/bin/* | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u | \
      while read -r lib; do \
        real=$(readlink -f "$lib"); \
        dpkg -S "$real" 2>/dev/null || dpkg -S "/usr${real#/usr}" 2>/dev/null || dpkg -S "${real#/usr}"; \
      done | cut -d: -f1 | sort -u > /out/runtime-packages; \
    echo ibverbs-providers >> /out/runtime-packages; \
    cat /out/runtime-packages

FROM ${DEBIAN}-slim AS runtime
COPY --from=build /out/runtime-packages /tmp/runtime-packages
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(cat /tmp/runtime-packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=build /out/usr/bin/ /usr/bin/
# Non-root by default, for rdma-webhook. The device plugin's DaemonSet sets runAsUser 0 (it
# creates sockets in the kubelet's root-owned directories), with every capability dropped.
RUN useradd --system --uid 65532 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin kube-rdma
USER 65532:65532
CMD ["/usr/bin/rdma-webhook"]
