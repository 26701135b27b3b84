#!/usr/bin/env bash
# Discovery, libibverbs and the plugin against a real kernel's RDMA stack, with no RDMA card:
# boots a Debian kernel under qemu, creates two soft-RoCE (rxe) devices in it and runs
# softroce_guest_tests there (guest.sh). The VM's root filesystem is this machine's, shared
# read-only over 9p, so the guest runs the binaries and libraries built and installed here; the
# kernel and a static busybox for the initramfs come from Debian's archive (apt-get download,
# unpacked into CACHE_DIR, not installed).
#   run.sh GUEST_TEST_BINARY CACHE_DIR SOURCE_DIR [MODE]
# MODE "shared" (the default) boots the machine's own Debian kernel (bookworm's 6.1) in the
# kernel's shared RDMA netns mode. "exclusive" boots trixie-backports' kernel (Linux 7.x, whose
# soft-RoCE can be moved into a network namespace) in exclusive mode, a device per pod: its apt
# lists go to CACHE_DIR/apt, checked with the machine's Debian keyring.
# Exit code: the guest tests' own; 77 (skipped) when qemu or the kernel package is not to be had.
set -euo pipefail
guest_tests=$1
cache=$2
src=$3
mode=${4:-shared}
skip() {
  echo "softroce: skipped: $*"
  exit 77
}

command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64 (scripts/setup.sh --tests installs qemu-system-x86)"
depmod=$(command -v depmod || echo /usr/sbin/depmod)
[[ -x $depmod ]] || skip "no depmod (scripts/setup.sh --tests installs kmod)"
command -v ibv_devinfo >/dev/null || skip "no ibv_devinfo (scripts/setup.sh --tests installs ibverbs-utils)"
command -v ib_write_bw >/dev/null || skip "no ib_write_bw (scripts/setup.sh --tests installs perftest)"
# The guest runs this machine's ip and rdma (guest.sh).
for tool in ip rdma; do
  command -v "$tool" >/dev/null || skip "no $tool (scripts/setup.sh --tests installs iproute2)"
done

mkdir -p "$cache"
cd "$cache"
apt_options=()
if [[ $mode == exclusive ]]; then
  mkdir -p apt/lists/partial apt/cache/archives/partial
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main" >apt/sources.list
  apt_options=(-o "Dir::Etc::SourceList=$cache/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache" -o Debug::NoLocking=1)
  apt-get "${apt_options[@]}" update >apt/update.log 2>&1 ||
    skip "cannot read trixie-backports' package lists: $(tail -n 1 apt/update.log)"
fi
kernel_pkg=$(apt-cache "${apt_options[@]}" depends linux-image-amd64 2>/dev/null |
  sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n 1)
[[ -n $kernel_pkg ]] || skip "apt knows no linux-image-amd64 (apt-get update?)"
version=${kernel_pkg#linux-image-}
# Linux 6.1's package holds the kernel and its modules; later ones split them into
# linux-binary-* and linux-modules-*, which linux-image-* depends on.
packages=$(apt-cache "${apt_options[@]}" depends "$kernel_pkg" 2>/dev/null |
  sed -n "s/^ *Depends: \(linux-\(binary\|modules\)-$version\)$/\1/p" | tr '\n' ' ')
[[ -n $packages ]] || packages=$kernel_pkg
if [[ ! -f kernel/lib/modules/$version/modules.dep ]]; then
  rm -rf kernel busybox ./*.deb
  # shellcheck disable=SC2086 # packages is a word list
  apt-get "${apt_options[@]}" download $packages >/dev/null 2>download.log &&
    apt-get download busybox-static >/dev/null 2>>download.log ||
    skip "cannot download $packages and busybox-static: $(tail -n 1 download.log)"
  for deb in linux-*.deb; do dpkg -x "$deb" kernel; done
  dpkg -x busybox-static_*.deb busybox
  rm -f ./*.deb
  # Merged /usr: the modules may be under usr/lib; the kernel image under boot/ or beside them.
  if [[ -d kernel/usr/lib/modules/$version ]]; then
    mkdir -p kernel/lib/modules && mv "kernel/usr/lib/modules/$version" kernel/lib/modules/
  fi
  "$depmod" -b kernel "$version" 2>/dev/null
fi
vmlinuz=kernel/boot/vmlinuz-$version
[[ -f $vmlinuz ]] || vmlinuz=kernel/lib/modules/$version/vmlinuz

# The initramfs: busybox, init.sh, and the modules in the order modules.dep says they load.
rm -rf initramfs && mkdir -p initramfs/{bin,modules,proc,sys,dev,root}
cp busybox/bin/busybox initramfs/bin/
cp "$src/test/softroce/init.sh" initramfs/init
python3 - "kernel/lib/modules/$version" initramfs/modules <<'PY'
import lzma, sys
moddir, out = sys.argv[1], sys.argv[2]
deps = {}
for line in open(moddir + "/modules.dep"):
    path, rest = line.split(":", 1)
    deps[path] = rest.split()
by_name = {p.rsplit("/", 1)[1].split(".ko")[0]: p for p in deps}
order = []
def visit(path):
    for d in reversed(deps[path]):  # modules.dep lists what loads last first
        visit(d)
    if path not in order:
        order.append(path)
# 9p over virtio for the root filesystem; rxe (its ICRC needs crc32) and rdma_ucm
# (/dev/infiniband/rdma_cm); dummy netdevs; macvlan, ipvlan and VLAN children for pods' networks.
# A name modules.dep does not know is built into that kernel (virtio_pci and crc32 in Linux 7).
for name in ("virtio_pci", "9pnet_virtio", "9p", "crc32_generic", "rdma_rxe", "rdma_ucm", "dummy",
             "macvlan", "ipvlan", "8021q"):
    if name in by_name:
        visit(by_name[name])
# busybox's insmod loads plain .ko files: compressed ones are unpacked here.
for i, path in enumerate(order):
    data = open(moddir + "/" + path, "rb").read()
    if path.endswith(".xz"):
        data = lzma.decompress(data)
    name = path.rsplit("/", 1)[1].split(".ko")[0] + ".ko"
    open("%s/%02d-%s" % (out, i, name), "wb").write(data)
PY
(cd initramfs && find . | ../busybox/bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >initramfs.gz

# TCG, not KVM: nested KVM on this project's VMs stalls in the guest's early boot. Emulated, the
# boot takes ~15 s and the tests a minute or two.
log=$cache/console.log
echo "softroce: booting $kernel_pkg under qemu (TCG), RDMA netns mode $mode; console in $log"
status=0
timeout 1800 qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 1 -nographic -no-reboot \
  -kernel "$vmlinuz" -initrd initramfs.gz \
  -append "console=ttyS0 panic=-1 quiet softroce=$src/test/softroce/guest.sh,$guest_tests,$src,$mode" \
  -virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap \
  -nic none </dev/null >"$log" 2>&1 || status=$?
grep -v -e '^qemu-system-x86_64: warning: host' -e 'speed is unknown' "$log" | tr -d '\r' |
  sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g'
[[ $status -eq 0 ]] || { echo "softroce: qemu failed or timed out (exit $status)"; exit 1; }
result=$(tr -d '\r' <"$log" | sed -n 's/^softroce-guest: exit \([0-9]*\)$/\1/p' | tail -n 1)
[[ -n $result ]] || { echo "softroce: the guest tests did not finish"; exit 1; }
exit "$result"
