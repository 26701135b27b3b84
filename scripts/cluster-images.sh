#!/usr/bin/env bash
# Makes the test cluster's container images (scripts/cluster.sh) without Docker or a
# registry: the node's containerd has no network, so each image is an OCI archive made here
# (test/cluster/oci_image.py) and imported with `ctr -n k8s.io images import`.
#   kube-rdma.tar  localhost/kube-rdma/kube-rdma:e2e  the five programs at /usr/bin with every
#                  shared library ldd finds for them (and libibverbs' providers, which it loads
#                  with dlopen: the Dockerfile's ibverbs-providers), busybox-static for the
#                  DaemonSet's init container (/bin/sh -ec 'mkdir; install; mv'; Debian's busybox
#                  has no install applet: coreutils' install is copied too), a kube-rdma user
#                  65532; user 65532:65532, CMD rdma-webhook, as the Dockerfile's image.
#   toolbox.tar    localhost/kube-rdma/toolbox:e2e    busybox-static with all its applets, users
#                  root and 1000; what the test pods run their probes in.
#   pause.tar      localhost/kube-rdma/pause:e2e      test/cluster/pause.c, static; the sandbox.
#   coredns.tar    localhost/kube-rdma/coredns:e2e    only when COREDNS is given: that program at
#                  /coredns (with its shared libraries, if any: scripts/cluster-build.sh builds it
#                  static, and then it is the whole image), user 65532:65532, ENTRYPOINT
#                  /coredns, as CoreDNS' own image; the cluster DNS (test/cluster/coredns/).
# The archives are deterministic: the same programs and Debian packages give the same digests.
#
#   scripts/cluster-images.sh PROGRAM_DIR OUT_DIR [COREDNS]
# PROGRAM_DIR: a CMake install prefix's bin/ or a build tree (each program is looked for
# directly in it, then anywhere below it). COREDNS: the coredns program (cluster-build.sh's bin
# folder has it); without it no coredns.tar is made, and one left in OUT_DIR by an earlier run is
# removed. Needs busybox-static, gcc with the static libc (scripts/setup.sh --tests), python3.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
die() {
  echo "cluster-images: $*" >&2
  exit 1
}
[[ $# -eq 2 || $# -eq 3 ]] || die "usage: scripts/cluster-images.sh PROGRAM_DIR OUT_DIR [COREDNS]"
programs_dir=$1
out=$2
coredns=${3:-}
[[ -d $programs_dir ]] || die "$programs_dir: no such directory"
[[ -z $coredns || (-f $coredns && -x $coredns) ]] || die "$coredns: not an executable file"
programs=(rdma-device-plugin rdma-dra-driver rdma-webhook rdmactl kube-rdma-memlock-hook kube-rdma-nccl-hook)
# The applets the kube-rdma image links: the init container's, and a few for kubectl exec.
kube_rdma_applets=(sh mkdir mv cat ls id sleep env grep test "[" cp rm ln chmod echo true false
  ps head tail wc)

busybox=$(command -v busybox) || die "busybox not found (Debian: busybox-static, scripts/setup.sh --tests)"
[[ $(ldd "$busybox" 2>&1) =~ "not a dynamic executable"|"statically linked" ]] ||
  die "$busybox is not statically linked (Debian: busybox-static, not busybox)"
install_tool=$(command -v install) || die "install not found (Debian: coreutils)"
command -v gcc >/dev/null || die "gcc not found (Debian: build-essential)"

umask 022
mkdir -p "$out"
work=$(mktemp -d /tmp/kube-rdma-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The program's path: PROGRAM_DIR/NAME, else the one executable NAME below PROGRAM_DIR.
find_program() {
  if [[ -f $programs_dir/$1 && -x $programs_dir/$1 ]]; then
    echo "$programs_dir/$1"
    return
  fi
  local found
  found=$(find "$programs_dir" -name CMakeFiles -prune -o -type f -name "$1" -perm -u+x -print)
  [[ -n $found ]] || die "$1 not found in $programs_dir (build it, or install with cmake --install)"
  [[ $(wc -l <<<"$found") -eq 1 ]] || die "$1 found more than once in $programs_dir: $(tr '\n' ' ' <<<"$found")"
  echo "$found"
}

# Prints the absolute paths of the shared libraries and the loader that ldd resolves for each
# file given; nothing for a static one. Fails on a library ldd cannot find.
shared_libraries() {
  local file out line
  for file in "$@"; do
    if ! out=$(ldd "$file" 2>&1); then
      grep -qE "not a dynamic executable|statically linked" <<<"$out" && continue
      die "ldd $file failed: $out"
    fi
    while read -r line; do
      case $line in
        "" | *"statically linked"*) ;;
        *"=> not found"*) die "$(basename "$file") needs ${line%% *}, which ldd cannot find" ;;
        # libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)
        *" => /"*) line=${line#* => } && echo "${line%% (*}" ;;
        # linux-vdso.so.1 (0x...), or an old vDSO line: linux-gate.so.1 =>  (0x...)
        linux-vdso.so.* | linux-gate.so.* | *" =>  ("* | *" => ("*) ;;
        # the loader: /lib64/ld-linux-x86-64.so.2 (0x...)
        /*) echo "${line%% (*}" ;;
        *) die "ldd $file: cannot read the line '$line'" ;;
      esac
    done <<<"$out"
  done | sort -u
}

# Copies each file at the same path under ROOT, symlinks resolved (the path ldd reports is
# often a soname link).
copy_at_same_path() {
  local root=$1 file
  shift
  for file in "$@"; do
    mkdir -p "$root$(dirname "$file")"
    cp -L "$file" "$root$file"
  done
}

# Debian 12's merged /usr (/bin, /sbin, /lib and /lib64 are links into /usr, as in the
# Dockerfile's base), etc/, tmp/ (1777, for any user) and busybox with the named applets.
base_rootfs() {
  local root=$1 applet d
  shift
  mkdir -p "$root"/{etc,usr/bin,usr/sbin,usr/lib,usr/lib64}
  for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
  install -d -m 1777 "$root/tmp"
  install -m 0755 "$busybox" "$root/usr/bin/busybox"
  for applet in "$@"; do
    [[ $applet == busybox ]] || ln -s busybox "$root/usr/bin/$applet"
  done
}

start=$(date +%s)

# kube-rdma
root=$work/kube-rdma
base_rootfs "$root" "${kube_rdma_applets[@]}"
binaries=()
for p in "${programs[@]}"; do
  path=$(find_program "$p")
  install -m 0755 "$path" "$root/usr/bin/$p"
  binaries+=("$path")
done
install -m 0755 "$install_tool" "$root/usr/bin/install"
binaries+=("$install_tool")
libraries=$(shared_libraries "${binaries[@]}")
# libibverbs finds its hardware providers through /etc/libibverbs.d and opens them with dlopen(),
# from the real (/usr) path of its own directory.
verbs=$(grep '/libibverbs\.so\.1$' <<<"$libraries" | head -1) || true
if [[ -n $verbs ]]; then
  provider_dir=$(dirname "$(realpath "$verbs")")/libibverbs
  mapfile -t providers < <(find "$provider_dir" -maxdepth 1 -name '*.so' 2>/dev/null | sort)
  drivers=(/etc/libibverbs.d/*.driver)
  [[ ${#providers[@]} -gt 0 && -e ${drivers[0]} ]] ||
    die "libibverbs is linked but $provider_dir or /etc/libibverbs.d is empty (Debian: ibverbs-providers)"
  copy_at_same_path "$root" "${drivers[@]}" "${providers[@]}"
  libraries=$(shared_libraries "${binaries[@]}" "${providers[@]}")
fi
mapfile -t libraries <<<"$libraries"
copy_at_same_path "$root" "${libraries[@]}"
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
kube-rdma:x:65532:65532:kube-rdma:/nonexistent:/usr/sbin/nologin
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
kube-rdma:x:65532:
EOF
# The test suite puts AddressSanitizer builds in this image. ASan keeps up to 256 MiB of freed
# memory in quarantine by default, which a program that allocates steadily (the DRA driver's
# LIST a second) fills until the manifests' memory limits OOM-kill it (seen: 128 Mi after about
# a minute). A small quarantine keeps the finding of use-after-free within those limits; programs
# built without ASan ignore the variable.
python3 "$repo/test/cluster/oci_image.py" --rootfs "$root" --out "$out/kube-rdma.tar" \
  --name localhost/kube-rdma/kube-rdma:e2e --user 65532:65532 --cmd '["/usr/bin/rdma-webhook"]' \
  --env ASAN_OPTIONS=quarantine_size_mb=4:thread_local_quarantine_size_kb=64:malloc_context_size=8

# toolbox
root=$work/toolbox
mapfile -t applets < <("$busybox" --list)
[[ ${#applets[@]} -gt 100 ]] || die "$busybox --list printed ${#applets[@]} applets"
base_rootfs "$root" "${applets[@]}"
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:user:/tmp:/bin/sh
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
user:x:1000:
EOF
python3 "$repo/test/cluster/oci_image.py" --rootfs "$root" --out "$out/toolbox.tar" \
  --name localhost/kube-rdma/toolbox:e2e --cmd '["sh"]'

# pause
root=$work/pause
mkdir -p "$root"
gcc -static -Os -s -Wall -Wextra -Werror -o "$root/pause" "$repo/test/cluster/pause.c" ||
  die "cannot build test/cluster/pause.c statically (Debian: libc6-dev, in build-essential)"
python3 "$repo/test/cluster/oci_image.py" --rootfs "$root" --out "$out/pause.tar" \
  --name localhost/kube-rdma/pause:e2e --entrypoint '["/pause"]'
made="kube-rdma.tar, toolbox.tar, pause.tar"

# coredns
if [[ -n $coredns ]]; then
  root=$work/coredns
  mkdir -p "$root"
  install -m 0755 "$coredns" "$root/coredns"
  coredns_libraries=$(shared_libraries "$coredns")
  if [[ -n $coredns_libraries ]]; then
    mapfile -t coredns_libraries <<<"$coredns_libraries"
    copy_at_same_path "$root" "${coredns_libraries[@]}"
  fi
  python3 "$repo/test/cluster/oci_image.py" --rootfs "$root" --out "$out/coredns.tar" \
    --name localhost/kube-rdma/coredns:e2e --user 65532:65532 --entrypoint '["/coredns"]'
  made+=", coredns.tar"
else
  # scripts/cluster.sh imports every archive in OUT_DIR; an earlier run's coredns.tar is not one.
  rm -f "$out/coredns.tar"
fi

echo "cluster-images: $made in $out ($(($(date +%s) - start)) s)"
