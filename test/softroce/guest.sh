#!/bin/sh
# PID 1's child inside the soft-RoCE VM (run.sh), in the machine's own root filesystem:
# two netdevs, a soft-RoCE device on each, then the guest tests.
#   guest.sh GUEST_TEST_BINARY SOURCE_DIR [MODE]
# MODE "exclusive": the kernel's exclusive RDMA netns mode, set before any device or namespace
# exists, and only the SoftRoceExclusive tests; otherwise every other test.
tests=$1
src=$2
mode=${3:-shared}
fail() { echo "softroce-guest: $*"; echo "softroce-guest: exit 1"; exit 1; }

# The root filesystem is read-only; temporary directories go to the guest's tmpfs.
export TMPDIR=/run/softroce-tmp
mkdir -p "$TMPDIR" || fail "cannot create $TMPDIR"

ip link set lo up
# mgmt0 carries the default route (the management NIC the plugin leaves out); data0 is the
# RDMA netdev. Dummy netdevs: rxe binds to any Ethernet netdev and follows its up/down.
ip link add mgmt0 type dummy && ip link set mgmt0 address 02:00:00:00:00:01 up &&
  ip addr add 192.0.2.10/24 dev mgmt0 && ip route add default via 192.0.2.1 dev mgmt0 ||
  fail "cannot set up mgmt0"
ip link add data0 type dummy && ip link set data0 address 02:00:00:00:00:02 up &&
  ip addr add 198.51.100.20/24 dev data0 && ip -6 addr add 2001:db8::20/64 dev data0 nodad ||
  fail "cannot set up data0"
if [ "$mode" = exclusive ]; then
  rdma system set netns exclusive || fail "cannot set the exclusive RDMA netns mode"
  filter='SoftRoceExclusive*'
  # runc, which the exclusive tests run, needs a cgroup hierarchy.
  mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "cannot mount cgroup2"
else
  filter='-SoftRoceExclusive*'
fi
rdma link add rxe0 type rxe netdev mgmt0 && rdma link add rxe1 type rxe netdev data0 ||
  fail "cannot add the rxe devices"

# The kernel fills the GID tables as addresses come up (the link-local ones after DAD): wait
# for rxe0's link-local and IPv4 GIDs and rxe1's link-local, IPv4 and IPv6 ones.
used() { cat /sys/class/infiniband/$1/ports/1/gids/* | grep -c -v '^0000:0000:0000:0000:0000:0000:0000:0000$'; }
i=0
until [ "$(used rxe0)" -ge 2 ] && [ "$(used rxe1)" -ge 3 ]; do
  i=$((i + 1))
  [ $i -gt 60 ] && fail "GID tables not filled: rxe0 $(used rxe0), rxe1 $(used rxe1) GIDs"
  sleep 1
done

# What a pod has: a memory /dev/shm (rdmactl doctor checks it).
mkdir -p /dev/shm && mount -t tmpfs -o size=256m shm /dev/shm || fail "cannot mount /dev/shm"

echo "softroce-guest: $(uname -r), $(rdma link show | tr '\n' ';')"
ibv_devinfo -v | grep -E 'hca_id|port:|state:|link_layer|GID'
. "$src/scripts/sanitizer-env.sh"
KUBE_RDMA_SOFTROCE_VM=1 GTEST_COLOR=no "$tests" --gtest_filter="$filter"
echo "softroce-guest: exit $?"
