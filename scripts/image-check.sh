#!/usr/bin/env bash
# Builds the Dockerfile and checks that the image does what manifests/ relies on:
#   - the default user is 65532;
#   - rdmactl reads a node (the bundled A100 fixture, mounted read-only) and prints its NCCL env;
#   - rdma-webhook, as 65532 with a read-only root, every capability dropped and no-new-privileges
#     (the Deployment's securityContext), serves /readyz and answers an AdmissionReview with a
#     patch over TLS;
#   - rdma-device-plugin, as uid 0 with a read-only root and no capabilities (the DaemonSet's),
#     discovers the fixture, creates its socket in the device-plugins directory and serves
#     /healthz and /metrics.
#
#   scripts/image-check.sh [IMAGE]            (default kube-rdma:dev)
#   KUBE_RDMA_DEBOOTSTRAP_BASE=1 scripts/image-check.sh
#       first makes debian:12 and debian:12-slim locally with debootstrap (for a Docker engine
#       that cannot pull from Docker Hub; Debian's archive is enough). Those local bases are
#       minbase, not Docker Hub's images: the image is larger than with the real -slim base.
# Needs a running Docker engine, curl, openssl, python3. Not part of the README's test command
# (an image build takes 10 to 20 minutes on 2 cores).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
image=${1:-kube-rdma:dev}
work=$(mktemp -d /tmp/kube-rdma-image.XXXXXX)
containers=()
cleanup() {
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "image-check: FAILED: $*" >&2
  exit 1
}
step() { echo "image-check: $*"; }

docker info >/dev/null 2>&1 || fail "no Docker engine answers (docker info)"

if [[ ${KUBE_RDMA_DEBOOTSTRAP_BASE:-0} == 1 ]]; then
  command -v debootstrap >/dev/null || fail "debootstrap is not installed (apt-get install debootstrap)"
  step "making debian:12 and debian:12-slim with debootstrap (minbase, bookworm)"
  debootstrap --variant=minbase bookworm "$work/base" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    fail "debootstrap (log: $(tail -3 "$work/debootstrap.log"))"
  rm -rf "$work/base/var/cache/apt/archives/"*.deb
  tar -C "$work/base" -c . | docker import -c 'CMD ["bash"]' - debian:12 >/dev/null
  docker tag debian:12 debian:12-slim
  rm -rf "$work/base"
fi

step "docker build -t $image $src"
start=$(date +%s)
DOCKER_BUILDKIT=${DOCKER_BUILDKIT:-0} docker build -q -t "$image" "$src" >"$work/build.log" 2>&1 ||
  fail "docker build (last lines: $(tail -5 "$work/build.log"))"
step "built in $(($(date +%s) - start)) s, $(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1 / 1e6}')"

user=$(docker run --rm "$image" id -u)
[[ $user == 65532 ]] || fail "default user is $user, not 65532"
step "default user 65532"

python3 "$src/test/fixtures/gen_sysfs.py" --out "$work/fixtures" --only a100-roce >/dev/null
node=$work/fixtures/a100-roce
env_out=$(docker run --rm --read-only -v "$node:/node:ro" "$image" \
  rdmactl --sysfs-root /node/sys --proc-root /node/proc nccl-env)
grep -qx 'NCCL_IB_HCA==mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1' \
  <<<"$env_out" || fail "rdmactl nccl-env printed: $env_out"
step "rdmactl nccl-env over the A100 fixture: the eight data NICs, management NIC left out"

# A CA and a serving certificate for 127.0.0.1; the key readable by 65532 as a Secret volume is.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" -days 1 \
  -subj /CN=image-check-ca 2>/dev/null
mkdir -p "$work/certs"
openssl req -newkey rsa:2048 -nodes -keyout "$work/certs/tls.key" -out "$work/tls.csr" \
  -subj /CN=image-check 2>/dev/null
echo "subjectAltName=IP:127.0.0.1" >"$work/san.ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days 1 -extfile "$work/san.ext" -out "$work/certs/tls.crt" 2>/dev/null
chmod 0755 "$work/certs" && chmod 0644 "$work/certs/"*

webhook=kube-rdma-image-check-webhook-$$
containers+=("$webhook")
docker run -d --name "$webhook" --read-only --cap-drop ALL --security-opt no-new-privileges \
  -p 127.0.0.1::8443 -v "$work/certs:/certs:ro" "$image" \
  rdma-webhook --tls-cert-file /certs/tls.crt --tls-private-key-file /certs/tls.key >/dev/null
webhook_port=$(docker port "$webhook" 8443/tcp | head -n 1 | sed 's/.*://')
for _ in $(seq 50); do
  curl -sf --cacert "$work/ca.crt" "https://127.0.0.1:$webhook_port/readyz" >/dev/null && break
  sleep 0.2
done
curl -sf --cacert "$work/ca.crt" "https://127.0.0.1:$webhook_port/readyz" >/dev/null ||
  fail "rdma-webhook never became ready: $(docker logs "$webhook" 2>&1 | tail -5)"
python3 - "$src/test/webhook/testdata/pods/pytorchjob-master.json" >"$work/review.json" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "image-check-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "namespace": "training", "operation": "CREATE", "object": pod}}))
PY
reply=$(curl -sf --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
  --data-binary @"$work/review.json" "https://127.0.0.1:$webhook_port/mutate") ||
  fail "POST /mutate failed: $(docker logs "$webhook" 2>&1 | tail -5)"
python3 - "$reply" <<'PY' || fail "unexpected AdmissionReview reply: $reply"
import base64, json, sys
response = json.loads(sys.argv[1])["response"]
assert response["uid"] == "image-check-1" and response["allowed"] is True
assert response["patchType"] == "JSONPatch"
paths = [op["path"] for op in json.loads(base64.b64decode(response["patch"]))]
assert any("securityContext" in p for p in paths), paths
PY
step "rdma-webhook as 65532, read-only root, no capabilities: /readyz ok, a review patched over TLS"

plugin=kube-rdma-image-check-plugin-$$
containers+=("$plugin")
mkdir -p "$work/device-plugins" "$work/state"
docker run -d --name "$plugin" --user 0:0 --read-only --cap-drop ALL -p 127.0.0.1::9101 \
  -v "$node:/node:ro" -v "$work/device-plugins:/var/lib/kubelet/device-plugins" \
  -v "$work/state:/var/run/kube-rdma" "$image" \
  rdma-device-plugin --sysfs-root /node/sys --proc-root /node/proc --dev-root /node/dev \
  --metrics-address :9101 >/dev/null
plugin_port=$(docker port "$plugin" 9101/tcp | head -n 1 | sed 's/.*://')
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$plugin_port/healthz" >/dev/null && break
  sleep 0.2
done
metrics=$(curl -sf "http://127.0.0.1:$plugin_port/metrics") ||
  fail "rdma-device-plugin /metrics: $(docker logs "$plugin" 2>&1 | tail -5)"
grep -q '^kube_rdma_plugin_devices{health="Healthy",resource="rdma/shared"} 128$' <<<"$metrics" ||
  fail "expected 128 healthy rdma/shared IDs in /metrics; logs: $(docker logs "$plugin" 2>&1 | tail -5)"
[[ -S $work/device-plugins/kube-rdma-rdma_shared.sock ]] ||
  fail "no socket in the device-plugins directory: $(ls "$work/device-plugins")"
step "rdma-device-plugin as uid 0, read-only root, no capabilities: 128 healthy rdma/shared IDs, socket created"
step "all checks passed for $image"
