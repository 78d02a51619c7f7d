#!/usr/bin/env bash
# Runs the DDP tests with one rank on each of two hosts made on this machine: two network
# namespaces joined by a veth pair, OpenMPI over TCP only (btl tcp,self: no shared memory). mpirun
# runs in the first namespace and starts the second rank through a launcher agent that enters the
# second namespace, as ssh would log in to a second machine. Needs root; exits 77 (ctest: skipped)
# with the reason where namespaces or the veth pair cannot be made.
#
#   two_hosts_test.sh TEST_EXE MPIRUN [MPIRUN FLAGS...]
set -u
exe=$(readlink -f "$1")
shift
mpirun=("$@")

skip() {
  echo "SKIPPED: $*"
  exit 77
}
((EUID == 0)) || skip "creating network namespaces needs root"
command -v ip >/dev/null || skip "no 'ip' command (Debian package iproute2)"

# Unique names: parallel runs (and a stale pair left by a killed run) must not collide.
ns_a="aclgrad-$$-$RANDOM-a"
ns_b="${ns_a%-a}-b"
work=$(mktemp -d)
cleanup() {
  ip netns delete "$ns_a" 2>/dev/null
  ip netns delete "$ns_b" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "$ns_a" 2>"$work/err" || skip "ip netns add refused: $(<"$work/err")"
ip netns add "$ns_b" 2>"$work/err" || skip "ip netns add refused: $(<"$work/err")"
# The addresses are private to this pair of namespaces, so parallel runs may use the same ones.
host_a=10.233.0.1 host_b=10.233.0.2 subnet=10.233.0.0/24
ip link add veth-a netns "$ns_a" type veth peer name veth-b netns "$ns_b" 2>"$work/err" ||
  skip "no veth pair: $(<"$work/err")"
set -e
ip -n "$ns_a" addr add "$host_a/24" dev veth-a
ip -n "$ns_b" addr add "$host_b/24" dev veth-b
for ns in "$ns_a" "$ns_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set veth-a up
ip -n "$ns_b" link set veth-b up
set +e

# mpirun's rsh launcher runs `AGENT HOST COMMAND...` to start its daemon on HOST.
cat >"$work/agent" <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in
  $host_a) ns=$ns_a ;;
  $host_b) ns=$ns_b ;;
  *) echo "agent: no namespace for host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$work/agent"
printf '%s slots=1\n%s slots=1\n' "$host_a" "$host_b" >"$work/hosts"

echo "hosts: $host_a in namespace $ns_a, $host_b in $ns_b"
start=$SECONDS
ip netns exec "$ns_a" timeout -k 5 100 "${mpirun[@]}" \
  --hostfile "$work/hosts" -np 2 --map-by node \
  --mca plm_rsh_agent "$work/agent" --mca btl tcp,self \
  --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet" \
  -x OPENBLAS_NUM_THREADS=1 -x ACLGRAD_TEST_HOSTS=2 \
  "$exe" &
job=$! # in the background, so that a signal to this script reaches it (and then the cleanup)
# timeout passes the signal on to mpirun, which ends its ranks (timeout kills it 5 s later if not)
trap 'kill -TERM $job 2>/dev/null; wait $job; exit 1' INT TERM HUP
wait $job
rc=$?
echo "mpirun: exit status $rc after $((SECONDS - start)) s"
for ns in "$ns_a" "$ns_b"; do
  dev=veth-${ns##*-}
  echo "$dev: $(ip netns exec "$ns" cat /sys/class/net/$dev/statistics/tx_bytes) bytes sent"
done
exit $rc
