#!/usr/bin/env bash
# Two data-parallel ranks in two network namespaces joined by a veth pair with a bandwidth limit,
# to see the gradient all-reduce go over a real (if virtual) network link and what the bucketed
# overlap hides of it (docs/distributed.md, "Over a network link"). Needs root (ip netns, tc).
#   bench/dp_over_veth.sh [RATE]      RATE: the link's rate for tc (default 1gbit)
# The ranks talk over the veth pair (OpenMPI's TCP transport only, no shared memory); mpirun reaches
# them through a second veth pair each. tc's netem (added latency) is used when the kernel has it,
# else only tbf (the rate). Everything it creates is removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-1gbit}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/dp_over_veth.XXXXXX")
cleanup() {
  ip netns del dpA 2> /dev/null || true
  ip netns del dpB 2> /dev/null || true  # deleting a namespace deletes its veth ends and their peers
  rm -rf "$OUT"
}
trap cleanup EXIT
ip netns add dpA
ip netns add dpB
# the ranks' link: 10.77.0.1 <-> 10.77.0.2
ip link add vA type veth peer name vB
ip link set vA netns dpA
ip link set vB netns dpB
ip -n dpA addr add 10.77.0.1/24 dev vA
ip -n dpB addr add 10.77.0.2/24 dev vB
# mpirun's links to each rank (PMIx and its daemons): 10.77.1.0/24 and 10.77.2.0/24
ip link add r0 type veth peer name a0
ip link set a0 netns dpA
ip addr add 10.77.1.1/24 dev r0
ip -n dpA addr add 10.77.1.2/24 dev a0
ip link add r1 type veth peer name b0
ip link set b0 netns dpB
ip addr add 10.77.2.1/24 dev r1
ip -n dpB addr add 10.77.2.2/24 dev b0
ip link set r0 up
ip link set r1 up
for ns in dpA dpB; do
  for dev in $(ip -n $ns -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do ip -n $ns link set "$dev" up; done
done
ip -n dpA route add default via 10.77.1.1
ip -n dpB route add default via 10.77.2.1
for side in "dpA vA" "dpB vB"; do
  set -- $side
  ip netns exec "$1" tc qdisc add dev "$2" root netem delay 1ms rate "$RATE" 2> /dev/null ||
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$RATE" burst 256kb latency 50ms
  ip netns exec "$1" tc qdisc show dev "$2"
done

export PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=10.77.0.0/16 OMPI_MCA_oob_tcp_if_include=10.77.0.0/16
MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24)
two_ranks() { "${MPI[@]}" -np 1 ip netns exec dpA "$@" : -np 1 ip netns exec dpB "$@"; }

two_ranks build/bin/dp_check allreduce 11200000 5
COMMON=(--model mini --seq-len 128 --steps 9 --log-every 3 --eval-every 0 --save-every 0 --warmup 1 --batch 4 --threads 1)
for mb in 1000 4 1; do
  two_ranks build/bin/bert_pretrain "${COMMON[@]}" --bucket-mb $mb --out "$OUT/b$mb" > "$OUT/b$mb.log" 2>&1
  echo "--bucket-mb $mb ($(grep -o '[0-9]* buckets' "$OUT/b$mb.log")):"
  grep -o '"tokens_per_s":[0-9.]*\|"allreduce_wait_s":[0-9.e-]*' "$OUT/b$mb/metrics.jsonl" | paste - -
done
