#!/bin/busybox sh
# The VM's /init (run.sh packs it into the initramfs with a static busybox and the modules):
# load the modules, mount the machine's root filesystem over 9p read-only, run guest.sh in it.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
for m in /modules/*.ko; do
  insmod "$m" || echo "softroce-init: insmod $m failed"
done
args=$(sed -n 's/.* softroce=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 root /root || echo "softroce-init: no 9p root"
for d in proc sys dev; do mount --move /$d /root/$d; done
# /tmp stays the machine's (a checkout or build directory may live there); the guest's scratch
# space is a tmpfs on /run, which guest.sh hands out as TMPDIR.
mount -t tmpfs run /root/run
# shellcheck disable=SC2086 # args is the guest's word list
chroot /root /bin/sh $args
poweroff -f
