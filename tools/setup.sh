#!/usr/bin/env bash
# fabricgen set-up on Debian 12, as root. Idempotent: run it as often as you like.
#
#   tools/setup.sh quickstart   install, prepare hugepages, build, run configs/quickstart.yaml
#   tools/setup.sh test         install, prepare hugepages, build with -Werror, run every test suite
#   tools/setup.sh build        install, prepare hugepages, build
#
# Environment: BUILD_DIR (default build), HUGEPAGES (2 MiB pages to reserve, default 1024),
# FG_ISOLATE=0 to leave CPU affinities alone (quickstart and test otherwise move
# the kernel's movable work to CPU 0: tools/isolate_cpus.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
mode="${1:-build}"
BUILD_DIR="${BUILD_DIR:-build}"
HUGEPAGES="${HUGEPAGES:-1024}"

say() { printf '\n== %s\n' "$*"; }

packages=(
  # build
  build-essential meson ninja-build pkg-config git
  # DPDK 22.11 and the libraries we link
  dpdk dpdk-dev libdpdk-dev libibverbs-dev libyaml-cpp-dev libabsl-dev
  libsystemd-dev  # named by libdpdk's static link flags (pkg-config --static: libpcap -> dbus-1 -> systemd)
  libgtest-dev libgmock-dev googletest libbenchmark-dev libcivetweb-dev
  # tests: independent decoders, the namespace lab, sanitizers and fuzzers
  python3 python3-scapy python3-yaml tshark tcpdump iproute2 nftables iputils-ping clang libclang-rt-14-dev
  prometheus  # promtool: lints /metrics (the daemon is not started here)
  # reports: figures (matplotlib) and the headless browser that checks them
  python3-matplotlib chromium
)

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "all ${#packages[@]} packages present"
    return
  fi
  say "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: installing packages needs root (run as root or with sudo)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer no.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  # We want only its promtool: a prometheus daemon we installed is not left running (where systemd runs).
  if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
}

prepare_hugepages() {
  # Hugepages are a speed-up, not a requirement: without them fabricgen runs
  # with --no-huge and sizes its memory itself.
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: leaving hugepages as they are (fabricgen falls back to --no-huge)"
    return
  fi
  local nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  if [ -w "$nr" ] && [ "$(cat "$nr")" -lt "$HUGEPAGES" ]; then
    echo "$HUGEPAGES" > "$nr" 2>/dev/null || true
  fi
  if ! grep -q " /dev/hugepages hugetlbfs " /proc/mounts; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
  fi
  if grep -q hugetlbfs /proc/mounts && [ -r "$nr" ] && [ "$(cat "$nr")" -gt 0 ]; then
    echo "hugepages: $(cat "$nr") x 2 MiB reserved, hugetlbfs at /dev/hugepages"
  else
    echo "hugepages: not available here; fabricgen will run with --no-huge"
  fi
}

build() {
  local werror="$1"
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" -Dwerror="$werror"
  else
    meson configure "$BUILD_DIR" -Dwerror="$werror" >/dev/null
  fi
  ninja -C "$BUILD_DIR"
}

say "packages"
install_packages
say "hugepages"
prepare_hugepages
if [ "$mode" != build ] && [ "${FG_ISOLATE:-1}" != 0 ]; then
  # The worker lcores' CPUs to themselves: movable kernel threads, unbound
  # workqueues and IRQs to CPU 0 (tools/isolate_cpus.sh says why; FG_ISOLATE=0 skips it).
  say "CPUs"
  tools/isolate_cpus.sh 0
fi

case "$mode" in
  build)
    say "build"
    build false
    ;;
  quickstart)
    say "build"
    build false
    say "quickstart: $BUILD_DIR/app/fabricgen run configs/quickstart.yaml --out results/quickstart"
    "$BUILD_DIR/app/fabricgen" run configs/quickstart.yaml --out results/quickstart
    ;;
  test)
    say "build (-Werror)"
    build true
    say "tests"
    meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2
    ;;
  *)
    echo "usage: tools/setup.sh [build|quickstart|test]" >&2
    exit 2
    ;;
esac
