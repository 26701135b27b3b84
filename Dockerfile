# kube-rdma: one image with rdma-device-plugin, rdma-dra-driver, rdma-webhook, rdmactl and the static
# kube-rdma-memlock-hook (which the DaemonSet's init container copies to the host), for manifests/.
#   docker build -t <registry>/kube-rdma:0.1.0 .
#   (cd manifests/overlays/cert-manager && kustomize edit set image kube-rdma=<registry>/kube-rdma:0.1.0)
# The build stage installs exactly what developers and CI build with (scripts/setup.sh) and
# installs the programs with CMake's install rules; the runtime stage gets only the Debian
# packages that hold the shared libraries the three programs load.
# Pin the bases by digest (debian:12@sha256:...) for reproducible builds.
ARG DEBIAN=debian:12

FROM ${DEBIAN} AS build
WORKDIR /src
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
# The build type scripts/build.sh and CI use (-O2), stripped on install.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
 && cmake --build /build -j"$(nproc)" \
 && cmake --install /build --prefix /out/usr --strip

FROM ${DEBIAN}-slim AS runtime
# gRPC (with Protobuf and Abseil as its dependencies) for the plugin, cpp-httplib and OpenSSL for
# the webhook, simdjson for the webhook's AdmissionReview decoding, yaml-cpp for the Kubernetes API
# client's kubeconfig reading, libibverbs for all three. libibverbs loads its hardware drivers
# (libmlx5, ...) with dlopen(), which ldd cannot see: hence ibverbs-providers, without which
# rdma-core finds no device on a real node.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libcpp-httplib0.11 libssl3 libsimdjson14 libyaml-cpp0.7 libibverbs1 \
      ibverbs-providers \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/usr/ /usr/
# A library missing from the list above fails the image build here, not the pod at start.
RUN if ldd /usr/bin/rdma-device-plugin /usr/bin/rdma-dra-driver /usr/bin/rdma-webhook /usr/bin/rdmactl \
      | grep "not found"; \
    then exit 1; fi
# Non-root by default, for rdma-webhook. The device plugin's DaemonSet sets runAsUser 0 (it
# creates sockets in the kubelet's root-owned directories), with every capability dropped.
RUN useradd --system --uid 65532 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin kube-rdma
USER 65532:65532
CMD ["/usr/bin/rdma-webhook"]
