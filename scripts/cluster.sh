#!/usr/bin/env bash
# A real Kubernetes cluster on this machine, one node or several of different hardware, with
# kube-rdma installed as an operator installs it, for the end-to-end tests and the demo
# (docs/cluster.md).
#
#   scripts/cluster.sh up [--driver device-plugin|dra|mixed] [--install kustomize|helm]
#                         [--nodes N|KIND,KIND...] [--operators]
#                                     start it, kube-rdma installed from test/cluster/overlays/
#                                     (kustomize, the default) or from manifests/helm/kube-rdma
#                                     with test/cluster/chart-values/ (helm); mixed: the device
#                                     plugin on the first node, the DRA driver on the others
#                                     (kustomize only); on N nodes (1, the
#                                     default, to 8) or on nodes of the KINDs named (a100, rocep,
#                                     ib), with the Kubeflow training operator, Volcano and JobSet
#                                     (--operators); the last line printed is
#                                     `export KUBECONFIG=<path>`
#   scripts/cluster.sh down                              stop everything it started
#   scripts/cluster.sh stop|start COMPONENT[@NODE]       one component (kubelet, containerd, ...)
#                                                        of the first node, or of NODE
#   scripts/cluster.sh kill COMPONENT[@NODE]             the same stopped with SIGKILL
#   scripts/cluster.sh status                            what runs
#
# Each node is a bundled fixture: its sysfs tree (test/fixtures/gen_sysfs.py) stands in for /sys
# in the kube-rdma pods, and its /dev/infiniband nodes are made with mknod. Kinds: a100 (node
# a100-roce-K, the A100 RoCE fixture), rocep (rocep-roce-K, the fixture renamed-rocep: four RoCE
# HCAs named rocep<bus>s0f0 by udev's naming, management NIC eno1), ib (ib-hdr8-K, eight
# InfiniBand HDR HCAs mlx5_0..7). N nodes are a100, rocep, then ib.
# Pods get their networks through Multus: the bridge CNI's eth0, and the macvlan networks a
# pod's k8s.v1.cni.cncf.io/networks annotation names (on rdma-data0, the node's stand-in for the
# data ports; the A100 fixture's GID tables hold the addresses test/cluster's rail pod is given).
# The first node and the control plane share one network and mount namespace of the cluster's
# own; every further node has its own pair, joined to the others by a bridge, so nothing of it
# touches the machine's network or mounts: the API server is reached from outside through a
# relay on 127.0.0.1:${KUBE_RDMA_CLUSTER_PORT:-6443}; `down` ends the namespaces and every mount
# with them. State lives in KUBE_RDMA_CLUSTER_DIR (default /var/tmp/kube-rdma-cluster).
#
# Environment: KUBE_RDMA_PROGRAMS (folder with the built kube-rdma programs; default: build
# them into build/ as scripts/demo.sh does), KUBE_RDMA_CLUSTER_PORT, KUBE_RDMA_CLUSTER_DIR.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
state=${KUBE_RDMA_CLUSTER_DIR:-/var/tmp/kube-rdma-cluster}
port=${KUBE_RDMA_CLUSTER_PORT:-6443}
control_ip=10.200.0.1      # the first node's "eth0", in the namespace the control plane shares
cluster_pod_cidr=10.88.0.0/13 # every node's pod range (use_node) lies in it
service_cidr=10.96.0.0/16
# Not locked on in this release: named so that a release which turns one off by default still
# runs what kube-rdma needs (DRA taints, consumable capacity, resource health).
feature_gates=DRAConsumableCapacity=true,DRADeviceTaints=true,DRADeviceTaintRules=true,ResourceHealthStatus=true
# The cluster's programs, in the order they start.
daemons=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy)

die() {
  echo "cluster: $*" >&2
  exit 1
}
say() { echo "cluster: $*" >&2; }

# The kinds of node `up --nodes` knows, and the kinds of N nodes when only their number is given.
node_kinds_known=(a100 rocep ib)
default_node_kinds() { # N
  local kinds=(a100 rocep) k
  for ((k = 2; k < $1; k++)); do kinds+=(ib); done
  echo "${kinds[@]:0:$1}"
}
# The kinds of this cluster's nodes, in order.
node_kinds() { cat "$state/node-kinds" 2>/dev/null || echo a100; }

# Node K (from 0) of the cluster: what it is and where its files are. The first node shares the
# control plane's namespaces and keeps the state folder's top level (the tests read its logs and
# files there); node K's files are under nodes/NAME, its processes' pid and log files end in
# @NAME. Sets node, node_name, fixture_variant, node_root, tag, node_ip, pod_cidr, pod_gateway,
# cgroup_root.
use_node() { # K
  node=$1
  local kinds
  read -ra kinds <<<"$(node_kinds)"
  case ${kinds[node]} in
    a100) node_name=a100-roce-$node fixture_variant=a100-roce-pod-rails ;;
    rocep) node_name=rocep-roce-$node fixture_variant=renamed-rocep ;;
    ib) node_name=ib-hdr8-$node fixture_variant=ib-hdr8 ;;
    *) die "node $node has no kind (state: $state/node-kinds)" ;;
  esac
  node_root=$state tag=
  ((node == 0)) || node_root=$state/nodes/$node_name tag=@$node_name
  node_ip=10.200.0.$((node + 1))
  pod_cidr=10.$((88 + node)).0.0/16
  pod_gateway=10.$((88 + node)).0.1
  cgroup_root=kube-rdma-e2e${tag:+-$node_name}
}
node_count() { wc -w <<<"$(node_kinds)"; }
# The node K whose name is NAME.
node_index() { # NAME
  local k
  for ((k = 0; k < $(node_count); k++)); do
    use_node "$k"
    [[ $node_name == "$1" ]] && return 0
  done
  die "no node '$1' in this cluster"
}

holder_pid() { cat "$state/pids/namespace$tag" 2>/dev/null; }
# Runs a command inside the current node's namespaces (use_node).
in_node() { nsenter --target "$(holder_pid)" --net --mount -- "$@"; }
# ... and inside the first node's, which the control plane shares.
in_cluster() { nsenter --target "$(cat "$state/pids/namespace")" --net --mount -- "$@"; }
running() { # NAME
  local pid
  pid=$(cat "$state/pids/$1" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null
}

# Starts NAME in the current node's namespaces, in its own session, logging to logs/NAME@NODE.log
# (logs/NAME.log on the first node).
start_daemon() { # NAME COMMAND...
  local name=$1$tag
  shift
  running "$name" && return 0
  setsid nsenter --target "$(holder_pid)" --net --mount -- "$@" >>"$state/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$state/pids/$name"
}

stop_daemon() { # NAME [SIGNAL]
  local pid
  pid=$(cat "$state/pids/$1" 2>/dev/null) || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "-${2:-TERM}" "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$state/pids/$1"
}

wait_for() { # SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${deadline}s waiting for $what (logs: $state/logs/)"
    sleep 0.2
  done
}

# --- certificates and kubeconfigs -------------------------------------------------------------

make_pki() {
  local pki=$state/pki
  mkdir -p "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=kube-rdma-e2e-ca \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  cert() { # NAME SUBJECT [SANS]
    openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
    local ext=$pki/$1.ext
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=serverAuth,clientAuth"
      [[ -n ${3:-} ]] && echo "subjectAltName=$3"
    } >"$ext"
    openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
      -days 30 -extfile "$ext" -out "$pki/$1.crt" 2>/dev/null
    rm -f "$pki/$1.csr" "$ext"
  }
  cert apiserver /CN=kube-apiserver \
    "IP:127.0.0.1,IP:$control_ip,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert admin "/O=system:masters/CN=kubernetes-admin"
  cert controller-manager /CN=system:kube-controller-manager
  cert scheduler /CN=system:kube-scheduler
  cert kube-proxy /CN=system:kube-proxy
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  local user k
  for user in controller-manager scheduler; do
    kubeconfig "$user" "https://127.0.0.1:6443" >"$state/$user.kubeconfig"
  done
  # Each node's kubelet its own identity (the Node authorizer and NodeRestriction go by it); the
  # first node reaches the API server on its loopback, the others at the first node's address.
  for ((k = 0; k < $(node_count); k++)); do
    use_node "$k"
    mkdir -p "$node_root"
    cert "kubelet$tag" "/O=system:nodes/CN=system:node:$node_name" "IP:$node_ip,DNS:$node_name"
    local server=https://127.0.0.1:6443
    ((k == 0)) || server=https://$control_ip:6443
    kubeconfig "kubelet$tag" "$server" >"$node_root/kubelet.kubeconfig"
    for user in admin kube-proxy; do
      kubeconfig "$user" "$server" >"$node_root/$user.kubeconfig"
    done
  done
  # The one for people and tests outside the namespace: through the relay.
  kubeconfig admin "https://127.0.0.1:$port" >"$state/kubeconfig"
}

kubeconfig() { # USER SERVER
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: kube-rdma-e2e
    cluster:
      server: $2
      certificate-authority: $state/pki/ca.crt
users:
  - name: $1
    user:
      client-certificate: $state/pki/$1.crt
      client-key: $state/pki/$1.key
contexts:
  - name: kube-rdma-e2e
    context: {cluster: kube-rdma-e2e, user: $1}
current-context: kube-rdma-e2e
EOF
}

# CAP_SYS_RESOURCE (bit 24) in this shell's effective set.
has_sys_resource() {
  local eff
  eff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
  (((0x$eff >> 24) & 1))
}

# --- the node's configuration files -----------------------------------------------------------

# The current node's (use_node) runtime, CNI, kubelet and kube-proxy configuration.
write_node_configs() {
  mkdir -p "$node_root/cni" "$node_root/cni-default" "$node_root/containerd"
  cat >"$node_root/containerd/config.toml" <<EOF
version = 3
root = "$node_root/containerd/root"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.runtime']
  # Machines without CAP_SYS_RESOURCE (this project's VMs) cannot lower a process's
  # oom_score_adj, which runc would do for every pod sandbox and fail.
  restrict_oom_score_adj = $(has_sys_resource && echo false || echo true)
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni", "$(cat "$state/bin")/cni"]
    conf_dir = "$node_root/cni"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "localhost/kube-rdma/pause:e2e"
EOF
  # Multus (thin plugin) is the runtime's one network: it runs the bridge for every pod's eth0
  # and adds the NetworkAttachmentDefinitions a pod names. It reads pods and those with the
  # admin's credentials (a test cluster: the Multus DaemonSet would use its service account).
  cat >"$node_root/cni/00-multus.conf" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "multus-cni-network",
  "type": "multus",
  "kubeconfig": "$node_root/admin.kubeconfig",
  "cniDir": "$node_root/multus",
  "binDir": "/usr/lib/cni",
  "clusterNetwork": "$node_root/cni-default/10-bridge.conf"
}
EOF
  # One plugin, not a conflist: Multus 4.2 caches a conflist delegate without its plugins'
  # own fields and then fails every pod's DEL ("no IP ranges specified"). The default route
  # (isDefaultGateway) takes a pod's traffic to Services, the kubernetes one included, through
  # the node's kube-proxy rules; without it the webhook cannot read ResourceClaims. Each node
  # has a range of its own; the nodes route each other's (connect_node).
  cat >"$node_root/cni-default/10-bridge.conf" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kube-rdma-e2e",
  "type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true,
  "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "$pod_cidr", "gateway": "$pod_gateway"}]]}
}
EOF
  cat >"$node_root/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine's kernel mounts cgroup v1; the kubelet still runs on it when told so.
failCgroupV1: false
cgroupDriver: cgroupfs
# Pods' cgroups under a root of their own, which 'down' removes.
cgroupRoot: /$cgroup_root
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $state/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $state/pki/kubelet$tag.crt
tlsPrivateKeyFile: $state/pki/kubelet$tag.key
featureGates: {$(echo "$feature_gates" | sed 's/=/: /g; s/,/, /g')}
failSwapOn: false
clusterDomain: cluster.local
# The kube-dns Service of CoreDNS (test/cluster/coredns/coredns.yaml).
clusterDNS: [10.96.0.10]
resolvConf: $node_root/resolv.conf
# The test machine's disk and memory, not a production node's: never evict for a nearly full disk.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
  echo "nameserver 127.0.0.1" >"$node_root/resolv.conf"
  cat >"$node_root/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clusterCIDR: $cluster_pod_cidr
hostnameOverride: $node_name
clientConnection: {kubeconfig: $node_root/kube-proxy.kubeconfig}
# conntrack limits are the host's (not a namespace's) to set.
conntrack: {maxPerCore: 0}
EOF
}

write_control_plane_configs() {
  # Who asked for what (user, user agent, verb, resource): how the API load of each kube-rdma
  # program is measured (test/cluster/api_load.py).
  cat >"$state/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
EOF
}

# --- namespaces --------------------------------------------------------------------------------

# Runs inside `unshare --net --mount` for the current node (use_node): its network and the
# host paths kube-rdma's manifests name, then waits for 'down'.
namespace_init() {
  set -e
  mount --make-rprivate /
  # The node's network: loopback and an eth0 carrying the default route, as on a real node whose
  # management NIC is eth0 (the A100 fixture's mlx5_0). A veth pair: the kernels we run on may
  # lack the dummy driver, never veth (containers need it). The first node holds both ends (its
  # uplink0 goes to the switch when a second node joins); every other node's eth0 comes from the
  # switch's namespace (connect_node).
  ip link set lo up
  if ((node == 0)); then
    ip link add eth0 type veth peer name uplink0
    ip addr add "$node_ip/24" dev eth0
    ip link set uplink0 up
    ip link set eth0 up
    ip route add default dev eth0
  fi
  # The addresses of the fixture's RoCE netdevs, which a real node's own namespace holds: the
  # plugin and the driver count only GIDs whose address is the node's (docs/pod-networks.md). On a
  # veth end of their own (the kernel here builds no GIDs from them: those are the fixture's).
  ip link add rdma-data0 type veth peer name rdma-data1
  ip link set rdma-data0 up
  local address
  for address in $(awk '$1 == "|--" && $2 != "127.0.0.1" { print $2 }' "$node_root/fixture/proc/net/fib_trie" | sort -u); do
    ip addr add "$address/32" dev rdma-data0
  done
  # Sockets and runtime state (containerd, kubelet plugins, CDI specs, kube-rdma state).
  mount -t tmpfs -o mode=755 tmpfs /run
  mkdir -p /run/lock
  # Mount points on the host's file system; 'down' removes those made here (empty, as no mount
  # outlives the namespace). The first node keeps the machine's pod logs and CNI state; every
  # other node has its own, since a kubelet deletes the log folders of pods it does not know and
  # host-local's address leases are per folder.
  local dirs=(/var/lib/kubelet /var/lib/kube-rdma /etc/cdi /dev/infiniband) dir
  ((node == 0)) || dirs+=(/var/log/pods /var/log/containers /var/lib/cni)
  for dir in "${dirs[@]}"; do
    [[ -e $dir ]] || { mkdir -p "$dir" && echo "$dir" >>"$state/created-dirs"; }
  done
  mount --bind "$node_root/node/kubelet" /var/lib/kubelet
  mount --bind "$node_root/node/kube-rdma" /var/lib/kube-rdma
  mount --bind "$node_root/node/etc-cdi" /etc/cdi
  if ((node > 0)); then
    mount --bind "$node_root/node/log-pods" /var/log/pods
    mount --bind "$node_root/node/log-containers" /var/log/containers
    mount --bind "$node_root/node/cni" /var/lib/cni
  fi
  # The fixture's sysfs at a fixed path, which the test overlays name.
  mkdir -p /run/kube-rdma-e2e/sys
  mount --bind "$node_root/fixture/sys" /run/kube-rdma-e2e/sys
  # The fixture's RDMA device nodes: uverbs majors and minors from its sysfs, rdma_cm as the
  # kernel numbers it (misc 10, dynamic minor; 10:58 on the machines we looked at).
  mount -t tmpfs -o mode=755 tmpfs /dev/infiniband
  local dev
  for dev in "$node_root"/fixture/sys/class/infiniband_verbs/uverbs*/dev; do
    IFS=: read -r major minor <"$dev"
    mknod -m 666 "/dev/infiniband/$(basename "$(dirname "$dev")")" c "$major" "$minor"
  done
  mknod -m 666 /dev/infiniband/rdma_cm c 10 58
  touch "$node_root/namespace-ready"
  exec sleep infinity
}

# The current node's namespaces, held by one process until 'down'. Node 0's come from the
# machine's; so do every other node's, which must not see the first node's mounts.
make_node_namespace() {
  mkdir -p "$node_root"/node/{kubelet,kube-rdma,etc-cdi}
  ((node == 0)) || mkdir -p "$node_root"/node/{log-pods,log-containers,cni}
  python3 "$repo/test/fixtures/gen_sysfs.py" --out "$node_root/fixtures" --only "$fixture_variant" >/dev/null
  ln -sfn "$node_root/fixtures/$fixture_variant" "$node_root/fixture"
  setsid unshare --net --mount --propagation private --fork -- "$0" _namespace-init "$state" "$node" \
    >"$state/logs/namespace$tag.log" 2>&1 </dev/null &
  echo $! >"$state/pids/namespace$tag"
  wait_for 10 "node $node_name's namespaces" test -e "$node_root/namespace-ready"
  # unshare --fork: the namespaces belong to its child.
  local child
  child=$(pgrep -P "$(holder_pid)" | head -1)
  [[ -n $child ]] || die "the namespace holder has no child (logs/namespace$tag.log)"
  echo "$child" >"$state/pids/namespace$tag"
}

# The switch between the nodes: a bridge in a network namespace of its own. Not in the first
# node's: with br_netfilter, a bridge's frames pass the conntrack of the namespace it is in, where
# a packet the node had already translated to a Service's endpoint clashed with its own entry and
# was dropped (pods and the API server reached no Service endpoint on another node).
in_switch() { nsenter --target "$(cat "$state/pids/switch")" --net -- "$@"; }
make_switch() {
  setsid unshare --net --fork -- sleep infinity >/dev/null 2>&1 </dev/null &
  local unshare_pid=$! child=
  wait_for 10 "the switch's namespace" pgrep -P "$unshare_pid"
  child=$(pgrep -P "$unshare_pid" | head -1)
  echo "$child" >"$state/pids/switch"
  in_switch ip link set lo up
  in_switch ip link add nodes0 type bridge
  # A switch filters nothing.
  in_switch sh -c 'test ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ||
    sysctl -qw net.bridge.bridge-nf-call-iptables=0'
  in_switch ip link set nodes0 up
  in_cluster ip link set uplink0 netns "$child"
  in_switch ip link set uplink0 master nodes0 up
}

# Joins the current node (not the first) to the others: its eth0 on the switch, which every
# node's uplink is a port of, and a route to every other node's pods.
connect_node() {
  local holder
  holder=$(holder_pid)
  [[ -e $state/pids/switch ]] || make_switch
  in_switch ip link add "uplink$node" type veth peer name eth0 netns "$holder"
  in_switch ip link set "uplink$node" master nodes0 up
  in_node ip addr add "$node_ip/24" dev eth0
  in_node ip link set eth0 up
  in_node ip route add default dev eth0
  local k other_ip other_cidr
  for ((k = 0; k < node; k++)); do
    read -r other_ip other_cidr < <(use_node "$k" && echo "$node_ip $pod_cidr")
    in_node ip route add "$other_cidr" via "$other_ip" dev eth0
    in_node_k "$k" ip route add "$pod_cidr" via "$node_ip" dev eth0
  done
  # Pods' traffic to another node's pods is routed through both nodes' namespaces.
  for ((k = 0; k <= node; k++)); do
    in_node_k "$k" sysctl -qw net.ipv4.ip_forward=1
  done
}

# Runs a command in node K's namespaces, whichever node is current.
in_node_k() { (use_node "$1" && shift && in_node "$@"); }

relay_command() { # socat's EXEC address: its colons escaped
  echo "nsenter --target $(cat "$state/pids/namespace") --net socat STDIO TCP\\:127.0.0.1\\:6443"
}

# --- up ----------------------------------------------------------------------------------------

build_programs() {
  if [[ -n ${KUBE_RDMA_PROGRAMS:-} ]]; then
    echo "$KUBE_RDMA_PROGRAMS"
    return
  fi
  say "building kube-rdma (build/, as scripts/demo.sh does)"
  "$repo/scripts/build.sh" >&2
  echo "$repo/build"
}

up() {
  local driver=device-plugin installer=kustomize nodes=1 operators=false
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --driver)
        driver=${2:-}
        shift 2 || die "--driver needs device-plugin, dra or mixed"
        ;;
      --install)
        installer=${2:-}
        shift 2 || die "--install needs kustomize or helm"
        ;;
      --nodes)
        nodes=${2:-}
        shift 2 || die "--nodes needs a number of nodes (1 to 8) or their kinds (a100,rocep,ib,...)"
        ;;
      --operators)
        operators=true
        shift
        ;;
      *) die "unknown option '$1' (up [--driver device-plugin|dra|mixed] [--install kustomize|helm] [--nodes N] [--operators])" ;;
    esac
  done
  local kinds kind
  if [[ $nodes =~ ^[0-9]+$ ]]; then
    read -ra kinds <<<"$(default_node_kinds "$nodes")"
  else
    IFS=, read -ra kinds <<<"$nodes"
  fi
  for kind in "${kinds[@]}"; do
    [[ " ${node_kinds_known[*]} " == *" $kind "* ]] ||
      die "--nodes: '$kind' is not a kind of node (${node_kinds_known[*]})"
  done
  # Eight: the nodes' pod ranges, 10.88.0.0/16 to 10.95.0.0/16, fill cluster_pod_cidr.
  ((${#kinds[@]} >= 1 && ${#kinds[@]} <= 8)) || die "--nodes: 1 to 8 nodes, not '$nodes'"
  [[ $driver == device-plugin || $driver == dra || $driver == mixed ]] ||
    die "--driver is device-plugin, dra or mixed, not '$driver'"
  [[ $installer == kustomize || $installer == helm ]] || die "--install is kustomize or helm, not '$installer'"
  [[ $driver == mixed && $installer == helm ]] && die "--driver mixed is installed by kustomize only"
  [[ $driver == mixed && ${#kinds[@]} -lt 2 ]] && die "--driver mixed needs at least two nodes"
  [[ $(id -u) == 0 ]] || die "up needs root (namespaces, mounts, cgroups, mknod)"
  use_node 0
  running namespace && die "a cluster is already up in $state (scripts/cluster.sh down first)"
  # What a cluster whose processes are gone left behind (a killed session, a reboot).
  [[ -d $state/pids ]] && down >/dev/null 2>&1
  local start=$SECONDS name

  "$repo/scripts/setup.sh" --tests
  local bin programs
  bin=$("$repo/scripts/cluster-build.sh" | tail -1)
  programs=$(build_programs | tail -1)
  export PATH="$bin:$PATH"

  rm -rf "$state"
  mkdir -p "$state"/{pids,logs,images}
  echo "$bin" >"$state/bin"
  echo "$driver" >"$state/driver"
  echo "$installer" >"$state/installer"
  echo "${kinds[*]}" >"$state/node-kinds"
  make_pki
  write_control_plane_configs
  local k nodes=${#kinds[@]}
  for ((k = 0; k < nodes; k++)); do
    use_node "$k"
    write_node_configs
    make_node_namespace
    ((k == 0)) || connect_node
  done
  use_node 0
  say "making the images (kube-rdma from $programs, toolbox, pause, coredns)"
  "$repo/scripts/cluster-images.sh" "$programs" "$state/images" "$bin/coredns" >&2

  start_control_plane
  # The relay runs outside the namespaces and enters them for each connection.
  setsid socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "EXEC:$(relay_command)" \
    >>"$state/logs/relay.log" 2>&1 </dev/null &
  echo $! >"$state/pids/relay"
  export KUBECONFIG=$state/kubeconfig
  wait_for 60 "kube-apiserver through the relay" kubectl get --raw /readyz
  start_controllers
  kubectl apply -f "$bin/network-attachment-definition-crd.yaml" >/dev/null

  local names=()
  for ((k = 0; k < nodes; k++)); do
    use_node "$k"
    start_node
    names+=("$node_name")
  done
  for ((k = 0; k < nodes; k++)); do
    use_node "$k"
    wait_for 60 "node $node_name to be Ready" \
      kubectl wait --for=condition=Ready "node/$node_name" --timeout=1s
    kubectl label node "$node_name" kube-rdma.io/rdma-node=true \
      "kube-rdma.io/e2e-driver=$(node_driver "$driver")" >/dev/null
  done
  kubectl apply -f "$repo/test/cluster/coredns/coredns.yaml" >/dev/null

  install_kube_rdma "$driver" "$installer"
  "$operators" && start_operators
  kubectl -n kube-system rollout status deployment/coredns --timeout=120s >&2
  for name in "${daemons[@]}"; do
    running "$name" || die "$name stopped: $(tail -3 "$state/logs/$name.log")"
  done
  for ((k = 1; k < nodes; k++)); do
    use_node "$k"
    for name in containerd kubelet kube-proxy; do
      running "$name$tag" || die "$name$tag stopped: $(tail -3 "$state/logs/$name$tag.log")"
    done
  done
  say "up in $((SECONDS - start)) s: nodes ${names[*]}, kube-rdma ($driver, by $installer; logs: $state/logs/)"
  say "kubectl of this Kubernetes: $bin/kubectl"
  echo "export KUBECONFIG=$state/kubeconfig"
}

start_control_plane() {
  local pki=$state/pki
  start_daemon etcd etcd --name default --data-dir "$state/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster default=http://127.0.0.1:2380 --unsafe-no-fsync --log-level warn
  start_apiserver
}

start_apiserver() {
  local pki=$state/pki
  start_daemon kube-apiserver kube-apiserver --etcd-servers http://127.0.0.1:2379 \
    --bind-address 0.0.0.0 --secure-port 6443 --advertise-address "$control_ip" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range "$service_cidr" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --kubelet-preferred-address-types InternalIP \
    --audit-policy-file "$state/audit-policy.yaml" --audit-log-path "$state/logs/audit.log" \
    --audit-log-maxsize 200 --audit-log-maxbackup 1 \
    --allow-privileged --feature-gates "$feature_gates"
}

# After the API server is ready: both read RBAC objects that it makes at its first start.
start_controllers() {
  local pki=$state/pki
  start_daemon kube-controller-manager kube-controller-manager \
    --kubeconfig "$state/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$state/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --feature-gates "$feature_gates"
  start_daemon kube-scheduler kube-scheduler --kubeconfig "$state/scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/scheduler.kubeconfig" \
    --authorization-kubeconfig "$state/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --feature-gates "$feature_gates"
}

start_containerd() {
  # Containers inherit the runtime's RLIMIT_MEMLOCK. Started with the soft limit of many
  # runtimes (64 KiB) under an 8 MiB hard limit, so that what the memlock hook raises shows even
  # where it cannot go past the hard limit (no CAP_SYS_RESOURCE, docs/cluster.md).
  start_daemon containerd prlimit --memlock=65536:8388608 -- \
    containerd --config "$node_root/containerd/config.toml"
}

# The current node's runtime (with the images), kubelet and kube-proxy.
start_node() {
  start_containerd
  wait_for 30 "containerd on $node_name" in_node ctr --address /run/containerd/containerd.sock version
  local image
  for image in "$state"/images/*.tar; do
    in_node ctr --address /run/containerd/containerd.sock -n k8s.io images import "$image" >/dev/null
  done
  start_kubelet
  start_daemon kube-proxy kube-proxy --config "$node_root/kube-proxy.yaml"
}

start_kubelet() {
  # The pods' cgroup root must exist in every hierarchy (cgroup v1: cpuset's needs its CPUs and
  # memory nodes before anything can join it).
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -e $hierarchy/cgroup.procs ]] || continue
    mkdir -p "$hierarchy/$cgroup_root"
    if [[ -e $hierarchy/cpuset.cpus ]]; then
      cat "$hierarchy/cpuset.cpus" >"$hierarchy/$cgroup_root/cpuset.cpus"
      cat "$hierarchy/cpuset.mems" >"$hierarchy/$cgroup_root/cpuset.mems"
    fi
  done
  start_daemon kubelet kubelet --config "$node_root/kubelet.yaml" --kubeconfig "$node_root/kubelet.kubeconfig" \
    --hostname-override "$node_name" --node-ip "$node_ip" \
    -v=2 # the device manager's registration lines, which the restart test times
}

# Volcano's scheduler, the Kubeflow training operator (kubeflow.org/v1 PyTorchJob), which hands
# each job's pods to Volcano with a PodGroup (gang scheduling), and JobSet, run as the control
# plane's programs are: processes with the admin's credentials.
start_operators() {
  local bin crd
  bin=$(cat "$state/bin")
  # `create`: the PyTorchJob and JobSet CRDs are larger than the annotation `apply` would keep.
  for crd in kubeflow.org_pytorchjobs scheduling.volcano.sh_podgroups scheduling.volcano.sh_queues \
    jobset.x-k8s.io_jobsets; do
    kubectl create -f "$bin/$crd.yaml" >/dev/null
  done
  for crd in pytorchjobs.kubeflow.org podgroups.scheduling.volcano.sh queues.scheduling.volcano.sh \
    jobsets.jobset.x-k8s.io; do
    wait_for 60 "the CRD $crd" kubectl wait --for condition=established "crd/$crd" --timeout=1s
  done
  # Its configuration in a folder of its own: it reloads it on any write there. Volcano's
  # ResourceTopology gate (on by default) makes it wait for a CRD of Volcano's node agent, which
  # is not installed. KUBECONFIG: its GPU-sharing code reads it, or logs an error for
  # ~/.kube/config; DEBUG_SOCKET_DIR moves a log-level socket out of /tmp.
  mkdir -p "$state/volcano/conf"
  cp "$repo/test/cluster/volcano/scheduler.conf" "$state/volcano/conf/"
  start_daemon vc-scheduler env KUBECONFIG="$state/admin.kubeconfig" DEBUG_SOCKET_DIR="$state/volcano" \
    vc-scheduler --kubeconfig "$state/admin.kubeconfig" --scheduler-name volcano \
    --scheduler-conf "$state/volcano/conf/scheduler.conf" --leader-elect=false \
    --feature-gates ResourceTopology=false --cache-dump-dir "$state/volcano" -v=2
  # Its first session writes the default Queue's status.
  wait_for 90 "Volcano's scheduler" has_output kubectl get queue default -o 'jsonpath={.status.allocated}'
  # The operator starts its controllers only once its webhook server has a certificate: it fills
  # this Secret (which must exist) and then waits for the files in a folder fixed in its code,
  # which a pod would mount from the Secret. No webhook configuration names it, so any pair does.
  kubectl create namespace kubeflow >/dev/null
  kubectl -n kubeflow create secret generic training-operator-webhook-cert >/dev/null
  local certs=/tmp/k8s-webhook-server/serving-certs
  mkdir -p "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=training-operator.kubeflow.svc \
    -keyout "$certs/tls.key" -out "$certs/tls.crt" 2>/dev/null
  # The workers' init container waits for the master's name to resolve (busybox's nslookup here:
  # test/cluster/training-operator/init-container.yaml).
  start_daemon training-operator training-operator.v1 --kubeconfig "$state/admin.kubeconfig" \
    --enable-scheme=pytorchjob --gang-scheduler-name=volcano --leader-elect=false \
    --metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:18081 --webhook-server-port=19443 \
    --pytorch-init-container-image=localhost/kube-rdma/toolbox:e2e \
    --pytorch-init-container-template-file="$repo/test/cluster/training-operator/init-container.yaml" \
    --zap-devel=false
  wait_for 60 "the training operator" in_cluster curl -sf http://127.0.0.1:18081/readyz
  start_jobset
}

# JobSet's controller, with its webhook server on 127.0.0.1 and a certificate of ours (its own
# rotator only knows the in-cluster Service: test/cluster/jobset/config.yaml), then its webhooks:
# JobSets must pass its defaulting webhook, which fills the fields its controller reads.
start_jobset() {
  local dir=$state/jobset
  mkdir -p "$dir"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=jobset-e2e-ca \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=jobset-webhook -keyout "$dir/tls.key" \
    -out "$dir/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$dir/tls.ext"
  openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 30 -extfile "$dir/tls.ext" -out "$dir/tls.crt" 2>/dev/null
  sed "s|CERT_DIR|$dir|" "$repo/test/cluster/jobset/config.yaml" >"$dir/config.yaml"
  start_daemon jobset-controller jobset-controller --kubeconfig "$state/admin.kubeconfig" \
    --config "$dir/config.yaml" --leader-elect=false --metrics-bind-address=0 \
    --health-probe-bind-address=127.0.0.1:18082 --zap-devel=false
  wait_for 60 "JobSet's controller" in_cluster curl -sf http://127.0.0.1:18082/readyz
  sed "s|CA_BUNDLE|$(base64 -w0 "$dir/ca.crt")|" "$repo/test/cluster/jobset/webhooks.yaml" |
    kubectl create -f - >/dev/null
}

# The driver of the current node (use_node) in a cluster installed with DRIVER: under mixed, the
# device plugin on the first node and the DRA driver on the others.
node_driver() { # DRIVER
  if [[ $1 != mixed ]]; then
    echo "$1"
  elif ((node == 0)); then
    echo device-plugin
  else
    echo dra
  fi
}

install_kube_rdma() { # DRIVER INSTALLER
  # The webhook's serving certificate, as the static-certs overlay's instructions say.
  local certs=$repo/manifests/overlays/static-certs/certs
  "$repo/scripts/gen-webhook-certs.sh" --out "$certs" >/dev/null
  if [[ $2 == helm ]]; then
    # As docs/deploy.md's Helm section says: the namespace first, labelled for Pod Security.
    kubectl create namespace kube-rdma >/dev/null
    kubectl label namespace kube-rdma pod-security.kubernetes.io/enforce=privileged >/dev/null
    helm install kube-rdma "$repo/manifests/helm/kube-rdma" -n kube-rdma \
      -f "$repo/test/cluster/chart-values/$1.yaml" \
      --set-file config.devicePlugin="$repo/test/cluster/overlays/common/plugin-config.json" \
      --set-file webhook.tls.crt="$certs/tls.crt" --set-file webhook.tls.key="$certs/tls.key" \
      --set-file webhook.tls.caCrt="$certs/ca.crt" >"$state/logs/apply.log"
  else
    kubectl apply -k "$repo/test/cluster/overlays/$1" >"$state/logs/apply.log"
  fi
  [[ $1 == dra ]] || kubectl -n kube-rdma rollout status daemonset/rdma-device-plugin --timeout=120s >&2
  [[ $1 == device-plugin ]] || kubectl -n kube-rdma rollout status daemonset/rdma-dra-driver --timeout=120s >&2
  kubectl -n kube-rdma rollout status deployment/rdma-webhook --timeout=120s >&2
  # Up means usable: every node offers its RDMA ports (the kubelet reports a device plugin's
  # resources with its next node status; the DRA driver publishes its slice).
  local k
  for ((k = 0; k < $(node_count); k++)); do
    use_node "$k"
    if [[ $(node_driver "$1") == dra ]]; then
      wait_for 60 "the DRA driver's ResourceSlice of $node_name" has_output kubectl get resourceslices \
        --field-selector "spec.driver=rdma.kube-rdma.io,spec.nodeName=$node_name" -o name
    else
      # RoCE ports are rdma/shared, InfiniBand ports rdma/hca (the default pools).
      wait_for 60 "rdma/shared or rdma/hca in $node_name's allocatable" has_output kubectl get \
        node "$node_name" -o 'jsonpath={.status.allocatable.rdma/shared}{.status.allocatable.rdma/hca}'
    fi
  done
  use_node 0
}

has_output() { [[ -n $("$@" 2>/dev/null) ]]; }

# --- down --------------------------------------------------------------------------------------

# The pid files of NAME: the first node's (NAME) and the other nodes' (NAME@NODE).
pid_names() { # NAME
  local file
  for file in "$state/pids/$1" "$state/pids/$1"@*; do
    [[ -e $file ]] && basename "$file"
  done
  return 0
}

down() {
  [[ -d $state ]] || return 0
  local name pid_name
  # The operators and the kubelets before the control plane, so that nothing new starts while the
  # rest goes.
  for name in relay jobset-controller training-operator vc-scheduler kube-proxy kubelet \
    kube-scheduler kube-controller-manager kube-apiserver etcd; do
    for pid_name in $(pid_names "$name"); do
      stop_daemon "$pid_name"
    done
  done
  # Containers and shims: everything in the pods' cgroups and in the nodes' mount namespaces.
  local holders=() namespaces=() holder pid
  for pid_name in $(pid_names namespace); do
    holder=$(cat "$state/pids/$pid_name")
    kill -0 "$holder" 2>/dev/null || continue
    # A stale pid file whose number a process of the machine now has: its mount namespace is
    # this shell's, and everything in it must live.
    [[ $(readlink "/proc/$holder/ns/mnt") == "$(readlink /proc/self/ns/mnt)" ]] && continue
    holders+=("$holder")
    namespaces+=("$(readlink "/proc/$holder/ns/mnt")")
  done
  if [[ ${#holders[@]} -gt 0 ]]; then
    for pid in /proc/[0-9]*; do
      pid=${pid#/proc/}
      [[ $pid == "$$" || " ${holders[*]} " == *" $pid "* ]] && continue
      if [[ " ${namespaces[*]} " == *" $(readlink "/proc/$pid/ns/mnt" 2>/dev/null) "* ]]; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done
  fi
  local cg
  for cg in /sys/fs/cgroup/*/kube-rdma-e2e* /sys/fs/cgroup/kube-rdma-e2e*; do
    [[ -d $cg ]] || continue
    # shellcheck disable=SC2046 # pids, one a word
    kill -KILL $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null) 2>/dev/null || true
  done
  for pid_name in $(pid_names containerd) $(pid_names namespace) switch; do
    stop_daemon "$pid_name" KILL
  done
  sleep 0.5
  # Empty cgroups, deepest first.
  for cg in /sys/fs/cgroup/*/kube-rdma-e2e* /sys/fs/cgroup/kube-rdma-e2e*; do
    if [[ -d $cg ]]; then
      find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
  done
  [[ -f $state/created-dirs ]] && sort -ru "$state/created-dirs" | xargs -r rmdir 2>/dev/null
  rm -f "$state/created-dirs"
  rm -rf /tmp/k8s-webhook-server
  find "$state" -maxdepth 3 -name namespace-ready -delete
  say "down (state kept in $state for its logs)"
}

status() {
  local name k
  report() {
    if running "$1"; then echo "$1: running (pid $(cat "$state/pids/$1"))"; else echo "$1: stopped"; fi
  }
  for name in namespace relay "${daemons[@]}"; do
    report "$name"
  done
  for ((k = 1; k < $(node_count); k++)); do
    use_node "$k"
    for name in namespace containerd kubelet kube-proxy; do
      report "$name$tag"
    done
  done
}

# --- one component -----------------------------------------------------------------------------

component() { # stop|start NAME[@NODE] [ARGS]
  [[ -e $state/pids/namespace ]] || die "no cluster is up in $state"
  PATH="$(cat "$state/bin"):$PATH"
  if [[ $2 == *@* ]]; then node_index "${2#*@}"; else use_node 0; fi
  case "$1:${2%@*}" in
    stop:*) stop_daemon "${2%@*}$tag" ;;
    kill:*) stop_daemon "${2%@*}$tag" KILL ;;
    # The end-to-end tests' stand-in for a GPU driver (test/cluster/fake-gpu-driver).
    start:fake-gpu-driver)
      start_daemon fake-gpu-driver fake-gpu-driver --node-name "$node_name" \
        --kubeconfig "$node_root/admin.kubeconfig" "${@:3}"
      ;;
    start:kubelet) start_kubelet ;;
    start:containerd) start_containerd ;;
    start:kube-proxy) start_daemon kube-proxy kube-proxy --config "$node_root/kube-proxy.yaml" ;;
    start:kube-apiserver) start_apiserver ;;
    *) die "start knows kube-apiserver, kubelet, containerd, kube-proxy and fake-gpu-driver, not '$2'" ;;
  esac
}

case "${1:-}" in
  up)
    shift
    up "$@"
    ;;
  down) down ;;
  status) status ;;
  stop | start | kill)
    [[ $# -ge 2 ]] || die "usage: $1 COMPONENT"
    component "$@"
    ;;
  _namespace-init)
    state=$2
    use_node "$3"
    namespace_init
    ;;
  *) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//' >&2 && exit 2 ;;
esac
