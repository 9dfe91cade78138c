#!/usr/bin/env bash
# Keeps the kernel's movable work off the CPUs fabricgen's worker lcores poll
# on, as a DPDK tester host needs (isolcpus does the same at boot): every
# kernel thread that may run anywhere, the unbound workqueues and the IRQs go
# to the housekeeping CPUs (default: CPU 0, where fabricgen's main lcore and
# control threads run). Per-CPU kernel threads (ksoftirqd/N, kworker/N:M,
# migration/N) and anything already pinned stay where they are. User
# processes are not moved: their children inherit an affinity, and
# fabricgen takes its default lcores from its own (`-l` follows the CPUs it
# may use). As root; idempotent; prints what it moved.
#
# Why: a worker lcore that a kernel thread preempts for more than 1 ms falls
# behind its set rate, and fabricgen then reports the trial as tester-limited
# (pacing_stall, naming the time its thread waited for its CPU: lcores[].
# guest_wait_ns). On a 2-vCPU virtual machine with DAMON (kdamond) enabled,
# a busy loop on CPU 1 (build/app/fabricgen-holdups) saw 6-38 hold-ups over 1 ms in 5 s
# before and 0-1 after (docs/lab.md, "The host").
#
#   tools/isolate_cpus.sh [HOUSEKEEPING_CPUS]     # e.g. 0, or 0-1 on a big host
set -euo pipefail
keep="${1:-0}"
if [ "$(id -u)" -ne 0 ]; then
  echo "isolate_cpus.sh: needs root; leaving CPU affinities as they are" >&2
  exit 0
fi
all=$(cat /sys/devices/system/cpu/online)
if [ "$keep" = "$all" ]; then
  echo "isolate: housekeeping CPUs $keep are every CPU: nothing to do"
  exit 0
fi
hexmask() {  # CPU list ("0", "0-3,8") -> hex mask
  /usr/bin/python3 -c "import sys
cpus=set()
for part in sys.argv[1].split(','):
    a,_,b=part.partition('-'); cpus.update(range(int(a), int(b or a)+1))
print('%x' % sum(1 << c for c in cpus))" "$1"
}
mask=$(hexmask "$keep")
full=$(hexmask "$all")
moved=()
for stat in /proc/[0-9]*/stat; do
  pid=${stat#/proc/}
  pid=${pid%/stat}
  # Field 4 of stat is the parent: kernel threads are kthreadd's (2) children.
  read -r -a f < "$stat" 2>/dev/null || continue
  ppid=${f[3]:-}
  [ "$pid" = 2 ] && continue
  # Only what may run anywhere (every online CPU); what is pinned stays.
  cur=$(taskset -p "$pid" 2>/dev/null | awk -F': ' '{print $2}') || continue
  [ "$cur" = "$full" ] || continue
  [ "$ppid" = 2 ] || continue
  if taskset -p "$mask" "$pid" > /dev/null 2>&1; then moved+=("$(cat "/proc/$pid/comm" 2>/dev/null || echo "$pid")"); fi
done
# Unbound workqueues take a hex mask.
wq=/sys/devices/virtual/workqueue/cpumask
if [ -w "$wq" ]; then echo "$mask" > "$wq" 2>/dev/null || echo "isolate: could not set $wq" >&2; fi
irqs=0
for a in /proc/irq/*/smp_affinity_list; do
  if echo "$keep" > "$a" 2>/dev/null; then irqs=$((irqs + 1)); fi
done
echo "$keep" > /proc/irq/default_smp_affinity 2>/dev/null || true
echo "isolate: to CPU $keep: ${#moved[@]} kernel threads (${moved[*]:0:6} ...), the unbound workqueues (mask $mask), $irqs IRQs"
