#!/bin/sh
# A cluster of N "hosts" on one machine: N network namespaces, each with a shaped data link and
# an unshaped control link, and Open MPI launching one orted per namespace over TCP. Needs root
# (ip netns) and iproute2.
#
#   netns-cluster.sh up N [RATE DELAY]   create hosts dtsim-ns1..N (default 1gbit 100us)
#   netns-cluster.sh down N              remove them (the bridge, the wire)
#   netns-cluster.sh shape N RATE DELAY  change the shaping of hosts that are up (between two
#                                        mpirun launches: the wire restarts)
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
# RATE is a number of bits per second with tc's unit: 1gbit, 500mbit, 100kbit; DELAY is one
# way, in us, ms or s (100us, 0.5ms) or 0.
#
# Control network: 198.18.71.0/24, a veth pair per host to the bridge dtsimbr0 (the bridge,
# where mpirun listens, is .254); unshaped, it carries Open MPI's launch and out-of-band
# traffic. Data network: 198.18.72.0/24, host i is .i; MPI messages (btl tcp) cross it only.
# Both lie in the range RFC 2544 reserves for benchmarking network devices. Nothing else is
# touched: every name starts with "dtsim".
#
# Shaping of the data network, chosen by DTSIM_NETNS_SHAPER (default auto: the first that works
# of wire, netem, tbf):
#   wire   each host has a tun device dtsim0, and build/dtsim-netwire (or $DTSIM_NETWIRE)
#          carries the packets between them: a full-duplex link of RATE per host to a
#          non-blocking switch plus DELAY one way, no drops (sim/app/mpi/wire.h);
#          DTSIM_NETWIRE_ARGS adds options (dtsim-netwire --help);
#   netem  the data network is a second veth per host on a bridge dtsimbr1, each host's egress
#          with netem's delay and rate (kernels with CONFIG_NET_SCH_NETEM);
#   tbf    as netem but rate only: a kernel without netem cannot add delay with tc.
# `run` exports DTSIM_NETNS_RATE, DTSIM_NETNS_DELAY (the delay applied, or "none") and
# DTSIM_NETNS_SHAPER.
set -eu

SUBNET=198.18.71          # control network
DATA_SUBNET=198.18.72     # data network
BRIDGE=dtsimbr0
DATA_BRIDGE=dtsimbr1
NS_PREFIX=dtsim-ns
HERE=$(cd "$(dirname "$0")" && pwd)
SELF=$HERE/$(basename "$0")
STATE=${TMPDIR:-/tmp}/dtsim-netns
NETWIRE=${DTSIM_NETWIRE:-$HERE/../build/dtsim-netwire}

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

# RATE in bytes/s and DELAY in ns, for dtsim-netwire.
rate_Bps() {
  awk -v r="$1" 'BEGIN {
    n = r + 0; u = substr(r, length(n "") + 1)
    m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : (u == "bit") ? 1 : -1
    if (m < 0 || n <= 0) exit 1
    printf "%.0f\n", n * m / 8 }' || die "RATE must be a number with gbit, mbit, kbit or bit, got '$1'"
}
delay_ns() {
  awk -v d="$1" 'BEGIN {
    n = d + 0; u = substr(d, length(n "") + 1)
    m = (d == "0") ? 0 : (u == "us") ? 1e3 : (u == "ms") ? 1e6 : (u == "s") ? 1e9 : -1
    if (m < 0 || n < 0) exit 1
    printf "%.0f\n", n * m }' || die "DELAY must be a number with us, ms or s (or 0), got '$1'"
}

stop_wire() {
  [ -f "$STATE.wire.pid" ] || return 0
  pid=$(cat "$STATE.wire.pid")
  if kill -TERM "$pid" 2>/dev/null; then
    tries=0
    while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 50 ]; do
      sleep 0.1; tries=$((tries + 1))
    done
  fi
  # What the wire carried, and how punctually.
  tail -n 1 "$STATE.wire.log" >&2 2>/dev/null || true
  rm -f "$STATE.wire.pid" "$STATE.wire.log" "$STATE.wire.ready"
}

# Starts dtsim-netwire on hosts 1..N with RATE and DELAY and waits until it has attached.
start_wire() {
  n=$1 rate_bytes=$2 delay_nanos=$3
  names=""
  i=1
  while [ "$i" -le "$n" ]; do names="$names $NS_PREFIX$i"; i=$((i + 1)); done
  rm -f "$STATE.wire.ready"
  # shellcheck disable=SC2086
  "$NETWIRE" --rate-Bps "$rate_bytes" --delay-ns "$delay_nanos" --subnet "$DATA_SUBNET.0" \
    --ready "$STATE.wire.ready" ${DTSIM_NETWIRE_ARGS:-} $names >"$STATE.wire.log" 2>&1 &
  echo $! >"$STATE.wire.pid"
  tries=0
  until [ -f "$STATE.wire.ready" ]; do
    tries=$((tries + 1))
    if [ "$tries" -ge 100 ] || ! kill -0 "$(cat "$STATE.wire.pid")" 2>/dev/null; then
      cat "$STATE.wire.log" >&2
      die "dtsim-netwire did not start"
    fi
    sleep 0.05
  done
}

# Sets the shaping of every host's data link (qdisc ACTION: add or change).
shape_qdiscs() {
  n=$1 rate=$2 delay=$3 action=$4
  i=1
  while [ "$i" -le "$n" ]; do
    if [ "$SHAPER" = netem ]; then
      # A deep queue (limit, in packets) so that netem's own queue never drops a TCP window.
      ip netns exec "$NS_PREFIX$i" tc qdisc "$action" dev dtsim0 root netem delay "$delay" \
        rate "$rate" limit 100000
    else
      # Token bucket: the bucket (burst) holds one 64 KiB GSO segment and a little more, so a
      # segment is never refused and a message longer than the bucket sees the rate.
      ip netns exec "$NS_PREFIX$i" tc qdisc "$action" dev dtsim0 root tbf rate "$rate" \
        burst 80k latency 200ms
    fi
    i=$((i + 1))
  done
}

down() {
  n=$1
  stop_wire
  rm -f "$STATE.shaper"
  i=1
  while [ "$i" -le "$n" ]; do
    ip netns del "$NS_PREFIX$i" 2>/dev/null || true
    ip link del "dtsimv$i" 2>/dev/null || true
    ip link del "dtsimd$i" 2>/dev/null || true
    i=$((i + 1))
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  ip link del "$DATA_BRIDGE" 2>/dev/null || true
}

probe_netem() {
  ip link add dtsimprobe0 type veth peer name dtsimprobe1 2>/dev/null || return 1
  ok=1
  tc qdisc add dev dtsimprobe0 root netem delay 1us 2>/dev/null && ok=0
  ip link del dtsimprobe0 2>/dev/null || true
  return "$ok"
}

choose_shaper() {
  want=${DTSIM_NETNS_SHAPER:-auto}
  case "$want" in
    wire|netem|tbf|auto) ;;
    *) die "DTSIM_NETNS_SHAPER must be wire, netem, tbf or auto, got '$want'" ;;
  esac
  # The wire needs its program and tun devices that can be made (a container may list
  # /dev/net/tun and still refuse to open it).
  wire_ok=no
  if [ -x "$NETWIRE" ] && ip tuntap add dev dtsimprobe0 mode tun 2>/dev/null; then
    ip tuntap del dev dtsimprobe0 mode tun 2>/dev/null || true
    wire_ok=yes
  fi
  if [ "$want" = wire ] && [ "$wire_ok" = no ]; then
    die "shaper wire needs $NETWIRE (build it: make) and /dev/net/tun"
  fi
  if [ "$want" = netem ] && ! probe_netem; then
    die "shaper netem: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM is not set)"
  fi
  if [ "$want" = auto ]; then
    if [ "$wire_ok" = yes ]; then want=wire
    elif probe_netem; then want=netem
    else
      want=tbf
      echo "netns-cluster: no dtsim-netwire ($NETWIRE) and no netem qdisc in this kernel:" \
           "links are shaped with tbf and no delay is added" >&2
    fi
  fi
  SHAPER=$want
}

wait_up() {
  tries=0
  until [ "$(cat "/sys/class/net/$1/operstate" 2>/dev/null)" = up ]; do
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || die "link $1 does not come up"
    sleep 0.1
  done
}

up() {
  n=$1 rate=$2 delay=$3
  rate_bytes=$(rate_Bps "$rate")
  delay_nanos=$(delay_ns "$delay")
  choose_shaper
  DTSIM_NETNS_RATE=$rate DTSIM_NETNS_DELAY=$delay DTSIM_NETNS_SHAPER=$SHAPER
  [ "$SHAPER" = tbf ] && DTSIM_NETNS_DELAY=none
  export DTSIM_NETNS_DELAY DTSIM_NETNS_RATE DTSIM_NETNS_SHAPER
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "$BRIDGE already exists: run '$0 down N' first"
  fi
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  if [ "$SHAPER" != wire ]; then
    ip link add "$DATA_BRIDGE" type bridge
    ip link set "$DATA_BRIDGE" up
  fi
  i=1
  while [ "$i" -le "$n" ]; do
    ns=$NS_PREFIX$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add "dtsimv$i" type veth peer name ctl0 netns "$ns"
    ip link set "dtsimv$i" master "$BRIDGE"
    ip link set "dtsimv$i" up
    ip -n "$ns" addr add "$SUBNET.$i/24" dev ctl0
    ip -n "$ns" link set ctl0 up
    if [ "$SHAPER" = wire ]; then
      # A tun device with the largest MTU, so a TCP segment of 64 KiB is one packet for the
      # wire to carry (with 9000 bytes the ring allreduce missed its prediction by 18-32%
      # instead of 7%, and the wire had seven times the packets to time). IPv6 off: the wire
      # carries IPv4 only.
      ip -n "$ns" tuntap add dev dtsim0 mode tun
      ip netns exec "$ns" sysctl -q -w net.ipv6.conf.dtsim0.disable_ipv6=1 2>/dev/null || true
      ip -n "$ns" addr add "$DATA_SUBNET.$i/24" dev dtsim0
      ip -n "$ns" link set dtsim0 mtu 65535 up
    else
      ip link add "dtsimd$i" type veth peer name dtsim0 netns "$ns"
      ip link set "dtsimd$i" master "$DATA_BRIDGE"
      ip link set "dtsimd$i" up
      ip -n "$ns" addr add "$DATA_SUBNET.$i/24" dev dtsim0
      ip -n "$ns" link set dtsim0 up
    fi
    i=$((i + 1))
  done
  if [ "$SHAPER" = wire ]; then
    start_wire "$n" "$rate_bytes" "$delay_nanos"
  else
    shape_qdiscs "$n" "$rate" "$delay" add
  fi
  echo "$SHAPER" >"$STATE.shaper"
  # Wait until every host's links are up (the bridges forward at once: STP is off).
  i=1
  while [ "$i" -le "$n" ]; do
    wait_up "dtsimv$i"
    [ "$SHAPER" = wire ] || wait_up "dtsimd$i"
    i=$((i + 1))
  done
}

# Exports the Open MPI settings that launch across the hosts and sets DTSIM_MPIRUN_ARGS to the
# mpirun options naming them (a hostfile with one slot per host).
cluster_env() {
  n=$1
  hostfile=${DTSIM_NETNS_HOSTFILE:-$STATE-hosts}
  : >"$hostfile"
  i=1
  while [ "$i" -le "$n" ]; do
    echo "$NS_PREFIX$i slots=1" >>"$hostfile"
    i=$((i + 1))
  done
  # One daemon per host, started by this script; TCP between the namespaces only (no shared
  # memory: each rank is alone on its host); daemons on the control network, MPI messages on
  # the data network.
  OMPI_MCA_plm_rsh_agent="$SELF rsh"
  OMPI_MCA_plm_rsh_no_tree_spawn=1
  OMPI_MCA_btl=tcp,self
  OMPI_MCA_pml=ob1
  # Ranks that spin while they wait starve the kernel's packet processing (softirqs) and the
  # wire on a machine with few cores: packets then wait for the next timer tick, 4 ms here.
  # Yielding when idle hands the core over.
  OMPI_MCA_mpi_yield_when_idle=1
  # Each host's daemon believes it has the whole machine and would bind its rank to core 0,
  # so that all ranks share one core: leave the placement to the kernel.
  OMPI_MCA_hwloc_base_binding_policy=none
  # The TCP BTL's "put" protocol moves the bulk of a message over 192 KiB as one fragment;
  # two ranks sending such messages to each other at once then mostly take turns (an exchange
  # of 4 MiB each way over 1 Gbit/s: 68 ms instead of 35 ms, where two plain sockets take
  # 35.5 ms). Without it the bulk goes as 128 KiB send fragments and the exchange uses both
  # directions at once, as a network does. Set OMPI_MCA_btl_tcp_flags to override.
  OMPI_MCA_btl_tcp_flags=${OMPI_MCA_btl_tcp_flags:-send,inplace,need-ack,need-csum}
  OMPI_MCA_btl_tcp_if_include=$DATA_SUBNET.0/24
  OMPI_MCA_oob_tcp_if_include=$SUBNET.0/24
  # The cluster needs root, so mpirun runs as root inside it.
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  DTSIM_MPIRUN_ARGS="--hostfile $hostfile"
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_plm_rsh_agent OMPI_MCA_plm_rsh_no_tree_spawn OMPI_MCA_btl OMPI_MCA_pml \
         OMPI_MCA_mpi_yield_when_idle OMPI_MCA_hwloc_base_binding_policy OMPI_MCA_btl_tcp_flags \
         OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include DTSIM_MPIRUN_ARGS
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  up)
    check_n "${1:-}"; need_root
    up "$1" "${2:-1gbit}" "${3:-100us}"
    echo "netns-cluster: $1 hosts up (data $DATA_SUBNET.1..$1, ${2:-1gbit}, ${3:-100us}," \
         "shaped by $SHAPER)"
    ;;
  down)
    check_n "${1:-}"; need_root
    down "$1"
    ;;
  shape)
    check_n "${1:-}"; need_root
    [ $# -eq 3 ] || die "shape: give N RATE DELAY"
    rate_bytes=$(rate_Bps "$2")
    delay_nanos=$(delay_ns "$3")
    [ -f "$STATE.shaper" ] || die "shape: no cluster is up"
    SHAPER=$(cat "$STATE.shaper")
    case "$SHAPER" in
      wire) stop_wire 2>/dev/null; start_wire "$1" "$rate_bytes" "$delay_nanos" ;;
      *) shape_qdiscs "$1" "$2" "$3" change ;;
    esac
    ;;
  env)
    check_n "${1:-}"
    cluster_env "$1"
    for v in OMPI_MCA_plm_rsh_agent OMPI_MCA_plm_rsh_no_tree_spawn OMPI_MCA_btl OMPI_MCA_pml \
             OMPI_MCA_mpi_yield_when_idle OMPI_MCA_hwloc_base_binding_policy OMPI_MCA_btl_tcp_flags \
             OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include OMPI_ALLOW_RUN_AS_ROOT \
             OMPI_ALLOW_RUN_AS_ROOT_CONFIRM DTSIM_MPIRUN_ARGS; do
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
    sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] || [ "$cmd" = "help" ] || [ "$cmd" = "--help" ] || exit 2
    ;;
esac
