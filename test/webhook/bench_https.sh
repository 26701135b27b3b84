#!/usr/bin/env bash
# HTTPS keep-alive load, side by side in one run: rdma-webhook reviewing the guide's PyTorchJob
# master pod against nginx answering the same AdmissionReview reply over TLS (the ceiling for an
# HTTPS exchange on this machine). wrk at 32 and 256 connections; loopback only.
#
#   test/webhook/bench_https.sh [BUILD_DIR] [SECONDS] [WEBHOOK_THREADS]
# Figures go in BENCHMARKS.md "## Webhook".
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-webhook}
seconds=${2:-10}
threads=${3:-64}
webhook_port=18643
nginx_port=18644
work=$(mktemp -d /tmp/kube-rdma-bench-https.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A CA and a serving certificate for 127.0.0.1.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" -days 1 \
  -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$work/tls.key" -out "$work/tls.csr" \
  -subj /CN=bench 2>/dev/null
echo "subjectAltName=IP:127.0.0.1" >"$work/san.ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days 1 -extfile "$work/san.ext" -out "$work/tls.crt" 2>/dev/null

# The AdmissionReview the API server would send for the guide's master pod.
python3 - "$src/test/webhook/testdata/pods/pytorchjob-master.json" >"$work/review.json" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "namespace": "training", "operation": "CREATE",
    "userInfo": {"username": "system:serviceaccount:kubeflow:training-operator"},
    "object": pod, "oldObject": None, "dryRun": False}}, separators=(",", ":")))
PY

"$build/webhook/rdma-webhook" --tls-cert-file "$work/tls.crt" --tls-private-key-file "$work/tls.key" \
  --listen-address "127.0.0.1:$webhook_port" --threads "$threads" --log-format json \
  2>"$work/webhook.log" &
pids+=($!)
for _ in $(seq 50); do
  curl -sf --cacert "$work/ca.crt" "https://127.0.0.1:$webhook_port/readyz" >/dev/null && break
  sleep 0.1
done
# nginx answers with exactly the bytes the webhook answers.
curl -sf --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
  --data-binary @"$work/review.json" "https://127.0.0.1:$webhook_port/mutate" >"$work/reply.json"
grep -q '"patchType":"JSONPatch"' "$work/reply.json"

mkdir -p "$work/nginx"
cat >"$work/nginx.conf" <<NGINX
worker_processes auto;
error_log $work/nginx/error.log warn;
pid $work/nginx/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  client_max_body_size 6m;
  client_body_buffer_size 64k;
  keepalive_requests 1000;
  server {
    listen 127.0.0.1:$nginx_port ssl;
    ssl_certificate $work/tls.crt;
    ssl_certificate_key $work/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location = /mutate {
      default_type application/json;
      return 200 '$(cat "$work/reply.json")';
    }
  }
}
NGINX
nginx -p "$work/nginx" -c "$work/nginx.conf" -g 'daemon off;' &
pids+=($!)
for _ in $(seq 50); do
  curl -sf --cacert "$work/ca.crt" -X POST -H 'Content-Type: application/json' \
    --data-binary @"$work/review.json" "https://127.0.0.1:$nginx_port/mutate" >/dev/null && break
  sleep 0.1
done

cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/review.json", "rb")
wrk.body = f:read("*a")
f:close()
done = function(summary, latency, requests)
  io.write(string.format("RESULT rps=%.0f p50_ms=%.3f p99_ms=%.3f errors=%d non2xx=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
LUA

# CPU seconds (user + system, in clock ticks) used so far by a process and its children threads;
# for nginx the master and its workers. Per request it is the figure load on the machine
# disturbs least.
cpu_ticks() {
  local total=0 pid
  for pid in "$@" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
  done
  echo "$total"
}
nginx_pid=$(cat "$work/nginx/nginx.pid")
hz=$(getconf CLK_TCK)

echo "body $(wc -c <"$work/review.json") bytes, reply $(wc -c <"$work/reply.json") bytes," \
  "webhook threads $threads, ${seconds}s per run, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-12s %6s %10s %9s %9s %7s %12s\n" server conns req/s p50_ms p99_ms errors cpu_us/req
for conns in 32 256; do
  for target in rdma-webhook:$webhook_port:${pids[0]} nginx:$nginx_port:$nginx_pid; do
    IFS=: read -r name port pid <<<"$target"
    before=$(cpu_ticks "$pid")
    line=$(wrk -t2 -c"$conns" -d"${seconds}s" --timeout 10s -s "$work/post.lua" \
      "https://127.0.0.1:$port/mutate" | grep '^RESULT')
    after=$(cpu_ticks "$pid")
    eval "${line#RESULT }"
    cpu_us=$(((after - before) * 1000000 / hz / (rps * seconds)))
    printf "%-12s %6s %10s %9s %9s %7s %12s\n" "$name" "$conns" "$rps" "$p50_ms" "$p99_ms" \
      "$((errors + non2xx))" "$cpu_us"
  done
done
