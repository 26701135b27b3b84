#!/usr/bin/env bash
# ctest manifests_validate: installs the validation tools from the npm registry into a cache under
# the build directory (once; again only when package-lock.json changes), makes throw-away
# certificates for the static-certs overlay, then runs validate.mjs over every overlay, the
# examples and the matchCondition cases. Exit 77 (ctest: skipped) only when npm cannot be used.
#
# With the built programs and the fixture directory, validate.mjs also starts rdma-device-plugin,
# rdma-webhook and rdma-dra-driver as the rendered manifests do.
#
# Usage: run.sh SOURCE_DIR CACHE_DIR [PLUGIN_BIN WEBHOOK_BIN DRA_BIN FIXTURES_DIR]
set -euo pipefail
src=$(cd "${1:?source dir}" && pwd)
cache=${2:?cache dir}
programs=()
if [[ $# -ge 6 ]]; then
  for f in "$3" "$4" "$5"; do
    [[ -x "$f" ]] || { echo "FAIL $f is not built (build everything before ctest)"; exit 1; }
  done
  [[ -d "$6/a100-roce" ]] || { echo "FAIL no fixtures in $6 (cmake --build <dir> --target fixtures)"; exit 1; }
  programs=(--plugin "$3" --webhook "$4" --dra "$5" --fixtures "$6")
fi
here="$src/test/manifests"

skip() { echo "skipped: $*"; exit 77; }
command -v node >/dev/null || skip "node is not installed (the validators run on Node.js)"
command -v npm >/dev/null || skip "npm is not installed"

mkdir -p "$cache"
stamp="$cache/.installed-$(sha256sum "$here/package-lock.json" | cut -c1-16)"
if [[ ! -f "$stamp" ]]; then
  rm -rf "$cache/node_modules" "$cache"/.installed-*
  cp "$here/package.json" "$here/package-lock.json" "$cache/"
  log="$cache/npm-ci.log"
  if ! (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1); then
    if grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH' "$log"; then
      skip "the npm registry is unreachable ($(grep -Eo 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH' "$log" | head -1))"
    fi
    cat "$log"
    echo "FAIL npm ci failed (see above)"
    exit 1
  fi
  touch "$stamp"
fi
# validate.mjs resolves its packages from the cache: run it from there.
cp "$here/validate.mjs" "$cache/validate.mjs"

# A copy of the manifests with generated (throw-away) certificates for overlays/static-certs,
# made by the real script so that its output is validated too.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/manifests" "$work/manifests"
"$src/scripts/gen-webhook-certs.sh" --out "$work/manifests/overlays/static-certs/certs" 2>/dev/null
cp -r "$src/examples" "$work/examples"

# The webhook's built-in copy of the matchConditions' resource rule, checked against them.
sent_prefix=$(sed -n 's/.*kSentResourcePrefix = "\(.*\)";/\1/p' "$src/webhook/policy.h")
[[ -n "$sent_prefix" ]] || { echo "FAIL kSentResourcePrefix not found in webhook/policy.h"; exit 1; }

node "$cache/validate.mjs" --manifests "$work/manifests" --examples "$work/examples" \
  --cases "$here/match-conditions.yaml" --sent-prefix "$sent_prefix" \
  --verbs-pod "$src/test/softroce/verbs-discovery-plugin.json" \
  --slice "$src/test/dra/testdata/a100-roce.slice.json" "${programs[@]}"
