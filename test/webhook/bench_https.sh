#!/usr/bin/env bash
# Admission latency as the API server sees it (DESIGN.md "Performance targets"), side by side in
# one run, same certificate: rdma-webhook reviewing the guide's PyTorchJob master pod, cpp-httplib
# alone (bare_httplib_server.cc: a pool of as many threads as the webhook's --max-connections) and
# nginx, both answering the webhook's reply bytes. Loopback only. Rows:
#   c8, c64, c256  open loop: 500 reviews/s spread over 8, 64, 256 keep-alive connections
#   c32-2000       open loop: 2,000 reviews/s over 32 connections
#   closed-c32     closed loop over 32 connections: reviews/s
#   reconnect      80 connections opened per second, each sending 4 reviews and closing (a fresh
#                  TLS handshake every 4 reviews; the times are the reviews', handshakes excluded)
# Each run has a warm-up; every request of the measured part is timed (h2load --log-file). ROUNDS
# rounds alternate the servers; the table gives medians, and webhook/bare is the median of the
# rounds' ratios. VmHWM is the webhook's and the bare server's peak RSS during the c256 row.
#
# With BARE_TWICE=1 a second bare server runs as one more column, bare2: the ratio bare2/bare is
# what the method gives for two identical servers (its noise), measured in the same rounds.
#
#   test/webhook/bench_https.sh [BUILD_DIR]
#   ROUNDS=5 SECONDS_PER_RUN=10 ROWS="c64 c256" WEBHOOK=/tmp/old/rdma-webhook test/webhook/bench_https.sh
set -euo pipefail
shopt -s inherit_errexit

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-rel}
webhook=${WEBHOOK:-$build/webhook/rdma-webhook}
rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_RUN:-8}
rows=${ROWS:-c8 c64 c256 c32-2000 closed-c32 reconnect}
max_connections=1024 # the webhook's default --max-connections
work=$(mktemp -d /tmp/kube-rdma-bench-https.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/tls.key" -out "$work/tls.crt" -days 1 \
  -subj /CN=bench -addext subjectAltName=IP:127.0.0.1 2>/dev/null

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

# Waits up to 5 s for the server on port $1 to answer the review; the answer goes to $2.
review_on() {
  for _ in $(seq 50); do
    curl -sf --cacert "$work/tls.crt" -H 'Content-Type: application/json' \
      --data-binary @"$work/review.json" "https://127.0.0.1:$1/mutate" >"$2" && return
    sleep 0.1
  done
  echo "no answer on port $1" >&2
  return 1
}

"$webhook" --tls-cert-file "$work/tls.crt" \
  --tls-private-key-file "$work/tls.key" --listen-address 127.0.0.1:18643 \
  --max-connections "$max_connections" 2>"$work/webhook.log" &
pids+=($!)
webhook_pid=$!
review_on 18643 "$work/reply.json"
grep -q '"patchType":"JSONPatch"' "$work/reply.json"

"$build/test/webhook/bare_httplib_server" "$work/tls.crt" "$work/tls.key" 18644 \
  "$work/reply.json" "$max_connections" 2>"$work/bare.log" &
pids+=($!)
bare_pid=$!
review_on 18644 "$work/reply.bare.json"
servers="webhook:18643 bare:18644 nginx:18645"
if [[ ${BARE_TWICE:-0} == 1 ]]; then
  "$build/test/webhook/bare_httplib_server" "$work/tls.crt" "$work/tls.key" 18646 \
    "$work/reply.json" "$max_connections" 2>"$work/bare2.log" &
  pids+=($!)
  review_on 18646 "$work/reply.bare2.json"
  servers+=" bare2:18646"
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
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:18645 ssl;
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
nginx -p "$work/nginx" -c "$work/nginx.conf" -g 'daemon off;' 2>/dev/null &
pids+=($!)
review_on 18645 "$work/reply.nginx.json"
cmp -s "$work/reply.json" "$work/reply.bare.json"
cmp -s "$work/reply.json" "$work/reply.nginx.json"

# One h2load run of row $2 against port $1; prints "reviews/s p50_ms p99_ms errors".
load() {
  local args=(--h1 -d "$work/review.json" -H 'Content-Type: application/json'
    --log-file "$work/requests.log")
  case $2 in
  c8 | c64 | c256) args+=(-c "${2#c}" --rps "$(bc -l <<<"500 / ${2#c}")") ;;
  c32-2000) args+=(-c 32 --rps 62.5) ;;
  closed-c32) args+=(-c 32) ;;
  reconnect) args+=(-c $((80 * seconds)) -n $((320 * seconds)) -r 8 --rate-period 100ms) ;;
  esac
  if [[ $2 != reconnect ]]; then
    args+=(-D "$seconds" --warm-up-time 2)
  fi
  rm -f "$work/requests.log"
  # h2load 1.52 has been seen to keep one connection busy long after -D when the server closes
  # connections (the webhook's keep-alive limit): the run is cut 30 s late, its log still counts.
  timeout -s INT $((seconds + 30)) h2load "${args[@]}" "https://127.0.0.1:$1/mutate" >/dev/null ||
    echo "h2load on port $1 ($2) cut or failed" >&2
  # Columns: start (us since the epoch), HTTP status, microseconds to the end of the response.
  sort -n -k3 "$work/requests.log" | awk -v seconds="$seconds" '
    { t[NR] = $3; if ($2 != 200) errors++ }
    END { printf "%.0f %.3f %.3f %d\n", NR / seconds, t[int(NR * 0.5) + 1] / 1000,
          t[int(NR * 0.99) + 1] / 1000, errors + 0 }'
}

hwm() { awk '/VmHWM/ { print $2 }' "/proc/$1/status"; }

echo "$(date -u +%FT%TZ) $(git -C "$src" rev-parse --short HEAD) $webhook; body" \
  "$(wc -c <"$work/review.json") B, reply $(wc -c <"$work/reply.json") B, ${seconds} s a run" \
  "after 2 s warm-up, $rounds rounds, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
  for row in $rows; do
    if [[ $row == c256 ]]; then # VmHWM from here: writing 5 to clear_refs resets it
      echo 5 >"/proc/$webhook_pid/clear_refs"
      echo 5 >"/proc/$bare_pid/clear_refs"
    fi
    for server in $servers; do
      figures=$(load "${server#*:}" "$row")
      echo "$round ${server%:*} $row $figures" | tee -a "$work/runs" >&2
    done
    if [[ $row == c256 ]]; then
      echo "$round webhook hwm $(hwm $webhook_pid)" >>"$work/runs"
      echo "$round bare hwm $(hwm $bare_pid)" >>"$work/runs"
    fi
  done
done

python3 - "$work/runs" "$rows" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)  # (server, row) -> round -> fields
for line in open(sys.argv[1]):
    f = line.split()
    runs[(f[1], f[2])][f[0]] = [float(x) for x in f[3:]]
med = lambda key, i: statistics.median(r[i] for r in runs[key].values())
ratio = lambda row, i, server="webhook": statistics.median(
    r[i] / runs[("bare", row)][n][i] for n, r in runs[(server, row)].items())
print("| row | webhook p50 / p99 ms | bare p50 / p99 ms | nginx p50 / p99 ms "
      "| webhook/bare p50 / p99 | reviews/s webhook / bare / nginx | errors |")
print("|---|---|---|---|---|---|---|")
for row in sys.argv[2].split():
    cells = ["%.2f / %.2f" % (med((s, row), 1), med((s, row), 2)) for s in ("webhook", "bare", "nginx")]
    rates = " / ".join("%.0f" % med((s, row), 0) for s in ("webhook", "bare", "nginx"))
    errors = sum(int(r[3]) for (s, rw), rr in runs.items() if rw == row for r in rr.values())
    print("| %s | %s | %.2f / %.2f | %s | %d |" % (
        row, " | ".join(cells), ratio(row, 1), ratio(row, 2), rates, errors))
if any(key[0] == "bare2" for key in runs):
    print("\nbare2/bare p50 / p99 (two identical servers): " + ", ".join(
        "%s %.2f / %.2f" % (row, ratio(row, 1, "bare2"), ratio(row, 2, "bare2"))
        for row in sys.argv[2].split()))
if ("webhook", "hwm") in runs:
    print("\nVmHWM during c256 (KiB, largest of the rounds): webhook %d, bare %d" % (
        max(r[0] for r in runs[("webhook", "hwm")].values()),
        max(r[0] for r in runs[("bare", "hwm")].values())))
PY
