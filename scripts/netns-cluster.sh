#!/bin/sh
# A cluster of N "hosts" on one machine: N network namespaces joined by veth pairs through one
# bridge, with tc shaping the bandwidth and delay of every host's link, and Open MPI launching
# one orted per namespace over TCP. Needs root (ip netns, tc) and iproute2.
#
#   netns-cluster.sh up N [RATE DELAY]   create hosts dtsim-ns1..N (default 1gbit 100us)
#   netns-cluster.sh down N              remove them (and the bridge)
#   netns-cluster.sh run N [RATE DELAY] -- COMMAND...
#                                        up, run COMMAND with the OMPI_MCA_* settings that
#                                        launch across the hosts exported and
#                                        $DTSIM_MPIRUN_ARGS set to "--hostfile FILE", then
#                                        down, always (trap), with COMMAND's exit status
#   netns-cluster.sh env N               print those settings as export lines (for eval)
#   netns-cluster.sh rsh HOST CMD...     the launcher mpirun calls (plm_rsh_agent): runs CMD
#                                        in namespace HOST, in its own UTS namespace whose
#                                        host name is HOST, so each orted is a distinct node
#
# Addresses: 198.18.71.0/24, inside the range RFC 2544 reserves for benchmarking network
# devices; host i is 198.18.71.i, the bridge (where mpirun listens) 198.18.71.254. Nothing else
# is touched: every name starts with "dtsim".
#
# Shaping: each namespace's eth0 has a netem qdisc with the delay and the rate, so a message
# from host a to host b crosses one shaped egress: one-way latency DELAY plus the software
# stack, bandwidth RATE (netem counts Ethernet/IP/TCP headers against the rate). On a kernel
# without netem, a tbf qdisc shapes the rate only and DELAY is not applied (the script says so).
# `run` exports DTSIM_NETNS_RATE and DTSIM_NETNS_DELAY (the delay applied, or "none").
set -eu

SUBNET=198.18.71
BRIDGE=dtsimbr0
NS_PREFIX=dtsim-ns
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

die() { echo "netns-cluster: $*" >&2; exit 2; }

check_n() {
  case "${1:-}" in
    ''|*[!0-9]*) die "N must be a whole number of hosts (2..250), got '${1:-}'" ;;
  esac
  [ "$1" -ge 2 ] && [ "$1" -le 250 ] || die "N must be in 2..250, got $1"
}

need_root() {
  [ "$(id -u)" -eq 0 ] || die "needs root (ip netns, tc)"
  command -v ip >/dev/null 2>&1 || die "ip not found (install iproute2)"
  command -v tc >/dev/null 2>&1 || die "tc not found (install iproute2)"
}

down() {
  n=$1
  i=1
  while [ "$i" -le "$n" ]; do
    ip netns del "$NS_PREFIX$i" 2>/dev/null || true
    ip link del "dtsimv$i" 2>/dev/null || true
    i=$((i + 1))
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}

# netem (delay and rate) when the kernel has it, else tbf (rate only): kernels built without
# CONFIG_NET_SCH_NETEM, such as small VM kernels, cannot add delay with tc at all.
probe_netem() {
  ip link add dtsimprobe0 type veth peer name dtsimprobe1 2>/dev/null || { NETEM=no; return; }
  if tc qdisc add dev dtsimprobe0 root netem delay 1us 2>/dev/null; then NETEM=yes; else NETEM=no; fi
  ip link del dtsimprobe0 2>/dev/null || true
}

up() {
  n=$1 rate=$2 delay=$3
  probe_netem
  if [ "$NETEM" = no ]; then
    echo "netns-cluster: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM is not set):" \
         "links are shaped to $rate with tbf, and no delay is added" >&2
    DTSIM_NETNS_DELAY=none
  else
    DTSIM_NETNS_DELAY=$delay
  fi
  DTSIM_NETNS_RATE=$rate
  export DTSIM_NETNS_DELAY DTSIM_NETNS_RATE
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "$BRIDGE already exists: run '$0 down N' first"
  fi
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  i=1
  while [ "$i" -le "$n" ]; do
    ns=$NS_PREFIX$i
    ip netns add "$ns"
    ip link add "dtsimv$i" type veth peer name eth0 netns "$ns"
    ip link set "dtsimv$i" master "$BRIDGE"
    ip link set "dtsimv$i" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ "$NETEM" = yes ]; then
      # A deep queue (limit, in packets) so that netem's own queue never drops a TCP window.
      ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" rate "$rate" limit 100000
    else
      # Token bucket: the bucket (burst) holds one 64 KiB GSO segment and a little more, so a
      # segment is never refused and a message longer than the bucket sees the rate.
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 80k latency 200ms
    fi
    i=$((i + 1))
  done
  # Wait until every host's link is up (the bridge forwards at once: STP is off).
  i=1
  while [ "$i" -le "$n" ]; do
    tries=0
    until [ "$(cat "/sys/class/net/dtsimv$i/operstate" 2>/dev/null)" = up ]; do
      tries=$((tries + 1))
      [ "$tries" -lt 50 ] || die "link of $NS_PREFIX$i does not come up"
      sleep 0.1
    done
    i=$((i + 1))
  done
}

# Exports the Open MPI settings that launch across the hosts and sets DTSIM_MPIRUN_ARGS to the
# mpirun options naming them (a hostfile with one slot per host).
cluster_env() {
  n=$1
  hostfile=${DTSIM_NETNS_HOSTFILE:-${TMPDIR:-/tmp}/dtsim-netns-hosts}
  : >"$hostfile"
  i=1
  while [ "$i" -le "$n" ]; do
    echo "$NS_PREFIX$i slots=1" >>"$hostfile"
    i=$((i + 1))
  done
  # One daemon per host, started by this script; TCP between the namespaces only (no shared
  # memory: each rank is alone on its host); daemons and ranks talk on this subnet only.
  OMPI_MCA_plm_rsh_agent="$SELF rsh"
  OMPI_MCA_plm_rsh_no_tree_spawn=1
  OMPI_MCA_btl=tcp,self
  OMPI_MCA_pml=ob1
  # Ranks that spin while they wait starve the kernel's packet processing (veth and bridge
  # forwarding run as softirqs) on a machine with few cores: packets then wait for the next
  # timer tick, 4 ms here. Yielding when idle hands the core over.
  OMPI_MCA_mpi_yield_when_idle=1
  # Each host's daemon believes it has the whole machine and would bind its rank to core 0,
  # so that all ranks share one core: leave the placement to the kernel.
  OMPI_MCA_hwloc_base_binding_policy=none
  OMPI_MCA_btl_tcp_if_include=$SUBNET.0/24
  OMPI_MCA_oob_tcp_if_include=$SUBNET.0/24
  DTSIM_MPIRUN_ARGS="--hostfile $hostfile"
  export OMPI_MCA_plm_rsh_agent OMPI_MCA_plm_rsh_no_tree_spawn OMPI_MCA_btl OMPI_MCA_pml \
         OMPI_MCA_mpi_yield_when_idle OMPI_MCA_hwloc_base_binding_policy \
         OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include DTSIM_MPIRUN_ARGS
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  up)
    check_n "${1:-}"; need_root
    up "$1" "${2:-1gbit}" "${3:-100us}"
    echo "netns-cluster: $1 hosts up ($SUBNET.1..$1, ${2:-1gbit}, ${3:-100us})"
    ;;
  down)
    check_n "${1:-}"; need_root
    down "$1"
    ;;
  env)
    check_n "${1:-}"
    cluster_env "$1"
    for v in OMPI_MCA_plm_rsh_agent OMPI_MCA_plm_rsh_no_tree_spawn OMPI_MCA_btl OMPI_MCA_pml \
             OMPI_MCA_mpi_yield_when_idle OMPI_MCA_hwloc_base_binding_policy \
             OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include DTSIM_MPIRUN_ARGS; do
      eval "echo \"export $v='\$$v'\""
    done
    ;;
  rsh)
    host=${1:-}
    case "$host" in $NS_PREFIX[0-9]*) ;; *) die "rsh: unknown host '$host'" ;; esac
    shift
    # mpirun passes the remote command as words for a shell, as it would to ssh.
    exec ip netns exec "$host" unshare --uts sh -c "hostname $host && $*"
    ;;
  run)
    check_n "${1:-}"; need_root
    n=$1; shift
    rate=1gbit delay=100us
    if [ $# -gt 0 ] && [ "$1" != "--" ]; then rate=$1; shift; fi
    if [ $# -gt 0 ] && [ "$1" != "--" ]; then delay=$1; shift; fi
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || die "run: no command given after --"
    DTSIM_NETNS_HOSTFILE=$(mktemp "${TMPDIR:-/tmp}/dtsim-netns-hosts.XXXXXX")
    export DTSIM_NETNS_HOSTFILE
    trap 'down "$n"; rm -f "$DTSIM_NETNS_HOSTFILE"' EXIT
    trap 'exit 130' INT TERM
    down "$n"
    up "$n" "$rate" "$delay"
    cluster_env "$n"
    status=0
    "$@" || status=$?
    exit "$status"
    ;;
  *)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] || [ "$cmd" = "help" ] || [ "$cmd" = "--help" ] || exit 2
    ;;
esac
