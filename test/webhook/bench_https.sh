#!/usr/bin/env bash
# HTTPS keep-alive load, side by side in one run: rdma-webhook reviewing the guide's PyTorchJob
# master pod against nginx answering the same AdmissionReview reply over TLS (the ceiling for an
# HTTPS exchange on this machine). wrk at 32 and 256 connections; loopback only.
#
#   test/webhook/bench_https.sh [BUILD_DIR] [SECONDS] [WEBHOOK_THREADS]
#   BINARIES="before=/tmp/old/rdma-webhook after=build-webhook/webhook/rdma-webhook" ROUNDS=6 \
#     CONNS=32 [COUNT_SYSCALLS=1] test/webhook/bench_https.sh build-webhook 8
# With BINARIES, every binary and nginx run side by side, all started once and loaded in turn in
# each of ROUNDS rounds (before/after comparisons in the same minutes); medians at the end.
# With FLOOR=1, a row "floor" posts the same review to the first binary's /floor, a path it does
# not serve: cpp-httplib reads the body and answers 404, so the row is what the server and TLS
# cost without a review (404s are not counted as errors there).
# With NO_REVIEW=1, a row "no-review" for webhook_no_review (test/webhook/no_review_server.cc):
# the same server, log line, metrics and 1.5 KB reply, with the review's outcome remembered from
# the first request instead of computed: the most any review could let the server reach.
# With BARE=1, a row "bare-httplib" for bare_httplib_server (test/webhook/bare_httplib_server.cc):
# cpp-httplib 0.11.4 alone, no kube-rdma code, answering the webhook's reply bytes.
# The webhooks run with the GLIBC_TUNABLES their Deployment sets (manifests/base/webhook/
# deployment.yaml), as in a cluster; WEBHOOK_TUNABLES= (empty) runs them with glibc's defaults.
# Figures go in BENCHMARKS.md "## Webhook".
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-webhook}
seconds=${2:-10}
threads=${3:-64}
binaries=${BINARIES:-rdma-webhook=$build/webhook/rdma-webhook}
if [[ ${NO_REVIEW:-0} == 1 ]]; then
  binaries+=" no-review=$build/test/webhook/webhook_no_review"
fi
rounds=${ROUNDS:-1}
conns_list=${CONNS:-32 256}
tunables=${WEBHOOK_TUNABLES-$(awk '/name: GLIBC_TUNABLES/ { getline; print $2 }' \
  "$src/manifests/base/webhook/deployment.yaml")}
nginx_port=18642
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

# Up to 5 s for a server on `port` to answer the review (servers without a /readyz).
wait_for_review() {
  for _ in $(seq 50); do
    curl -sf --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
      --data-binary @"$work/review.json" "https://127.0.0.1:$1/mutate" >/dev/null && return
    sleep 0.1
  done
}

# Each binary on its own port from 18643; targets are name:port:pid:path.
targets=()
port=18643
for entry in $binaries; do
  name=${entry%%=*}
  GLIBC_TUNABLES=$tunables "${entry#*=}" \
    --tls-cert-file "$work/tls.crt" --tls-private-key-file "$work/tls.key" \
    --listen-address "127.0.0.1:$port" --threads "$threads" --log-format json \
    2>"$work/$name.log" &
  pids+=($!)
  targets+=("$name:$port:$!:mutate")
  if [[ ${FLOOR:-0} == 1 && ${#targets[@]} == 1 ]]; then # the first binary
    targets+=("floor:$port:$!:floor")
  fi
  for _ in $(seq 50); do
    curl -sf --cacert "$work/ca.crt" "https://127.0.0.1:$port/readyz" >/dev/null && break
    sleep 0.1
  done
  # nginx answers with exactly the bytes the webhook answers; every binary must answer the same.
  curl -sf --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
    --data-binary @"$work/review.json" "https://127.0.0.1:$port/mutate" >"$work/reply.$name.json"
  grep -q '"patchType":"JSONPatch"' "$work/reply.$name.json"
  cp "$work/reply.$name.json" "$work/reply.json"
  port=$((port + 1))
done

if [[ ${BARE:-0} == 1 ]]; then
  "$build/test/webhook/bare_httplib_server" "$work/tls.crt" "$work/tls.key" "$port" \
    "$work/reply.json" "$threads" 2>"$work/bare-httplib.log" &
  pids+=($!)
  targets+=("bare-httplib:$port:$!:mutate")
  wait_for_review "$port"
fi

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
wait_for_review "$nginx_port"

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
targets+=("nginx:$nginx_port:$nginx_pid:mutate")
hz=$(getconf CLK_TCK)

# With COUNT_SYSCALLS=1, the system calls a server makes during a run (all its threads), counted
# by perf; the counting itself costs CPU, so CPU per request is read from runs without it.
count_syscalls=false
if [[ ${COUNT_SYSCALLS:-0} == 1 ]]; then
  perf stat -e raw_syscalls:sys_enter -p "$nginx_pid" -- sleep 0.1 >/dev/null
  count_syscalls=true
fi

echo "body $(wc -c <"$work/review.json") bytes, reply $(wc -c <"$work/reply.json") bytes," \
  "webhook threads $threads, GLIBC_TUNABLES '$tunables', ${seconds}s per run, $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-5s %-12s %6s %10s %9s %9s %7s %12s %12s\n" round server conns req/s p50_ms p99_ms errors \
  cpu_us/req syscalls/req
for round in $(seq "$rounds"); do
  for conns in $conns_list; do
    for target in "${targets[@]}"; do
      IFS=: read -r name port pid path <<<"$target"
      tracer=
      if $count_syscalls; then
        perf stat -x, -e raw_syscalls:sys_enter -o "$work/syscalls" \
          -p "$(echo "$pid" $(pgrep -P "$pid" || true) | tr ' ' ,)" &
        tracer=$!
        sleep 0.2
      fi
      before=$(cpu_ticks "$pid")
      line=$(wrk -t"$((conns < 2 ? 1 : 2))" -c"$conns" -d"${seconds}s" --timeout 10s -s "$work/post.lua" \
        "https://127.0.0.1:$port/$path" | grep '^RESULT')
      after=$(cpu_ticks "$pid")
      eval "${line#RESULT }"
      if [[ $path == floor ]]; then
        non2xx=0
      fi
      per_request=-
      if [[ -n $tracer ]]; then
        kill -INT "$tracer"
        wait "$tracer" || true
        # Counted over the run and the 0.2 s before it, when the server is idle.
        per_request=$(awk -F, -v r="$((rps * seconds))" '$3 ~ /sys_enter/ {printf "%.2f", $1 / r}' \
          "$work/syscalls")
      fi
      cpu_us=$(((after - before) * 1000000 / hz / (rps * seconds)))
      printf "%-5s %-12s %6s %10s %9s %9s %7s %12s %12s\n" "$round" "$name" "$conns" "$rps" \
        "$p50_ms" "$p99_ms" "$((errors + non2xx))" "$cpu_us" "$per_request" | tee -a "$work/rows"
    done
  done
done

if ((rounds > 1)); then
  echo "medians of $rounds rounds (vs nginx: the median of each round's req/s ratio to nginx's)"
  python3 - "$work/rows" <<'PY'
import collections, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
nginx = {(r[0], r[2]): float(r[3]) for r in rows if r[1] == "nginx"}
groups = collections.defaultdict(list)
for r in rows:
    groups[(r[1], r[2])].append(r)
print("%-12s %6s %10s %9s %9s %12s %12s %9s" % (
    "server", "conns", "req/s", "p50_ms", "p99_ms", "cpu_us/req", "syscalls/req", "vs_nginx"))
for (name, conns), rs in groups.items():
    med = lambda i: statistics.median(float(r[i]) for r in rs) if rs[0][i] != "-" else float("nan")
    ratio = statistics.median(float(r[3]) / nginx[(r[0], r[2])] for r in rs)
    print("%-12s %6s %10.0f %9.3f %9.3f %12.0f %12.2f %8.0f%%" % (
        name, conns, med(3), med(4), med(5), med(7), med(8), 100 * ratio))
PY
fi
