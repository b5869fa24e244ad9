#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages ito builds, tests and benchmarks with, if any is
# missing. Needs root for apt-get; without it, names what to install and fails.
#   scripts/install-deps.sh           the native build
#   scripts/install-deps.sh aarch64   also the aarch64 cross build and qemu-user (make aarch64-test)
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config     # build
  libgtest-dev gdb valgrind                 # tests (gdb: the ito-gdb.py helper's test; valgrind: ULT stacks registered)
  libtbb-dev libboost-fiber-dev libboost-context-dev  # benchmark comparisons
  wrk                                       # bench/httpd_bench.sh
  pigz pbzip2 lbzip2 zstd xz-utils p7zip-full sqlite3 python3 bash ripgrep  # real programs under the preload (tests/programs)
  libpython3.11-testsuite                   # CPython's own thread tests under the preload (tests/programs/cpython_threads.sh)
  rustc                                     # a Rust program's threads under the preload (tests/programs/rust_threads.rs)
  libgc-dev                                 # Boehm GC's stop-the-world under the preload (tests/posix/progs/boehm_gc.c)
  mpich libmpich-dev                        # the distributed mode (ito::dist) and its tests
  openmpi-bin libopenmpi-dev                # the same over Open MPI (preset openmpi, make openmpi-test); MPICH stays the default
  iproute2                                  # ranks on two hosts made of namespaces (tests/distributed/netns_pair.sh)
)
case "${1:-}" in
  "") ;;
  aarch64)
    # Cross compiler, qemu-user to run the tests, GoogleTest's sources to build it for the target.
    packages+=(g++-aarch64-linux-gnu qemu-user-static googletest) ;;
  *) echo "ito: install-deps.sh: unknown extra '$1' (known: aarch64)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "ito: missing Debian packages: ${missing[*]}" >&2
  echo "ito: run 'sudo apt-get install ${missing[*]}' or run make as root" >&2
  exit 1
fi
echo "ito: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Open MPI's alternatives outrank MPICH's (priority 50 against 40 on amd64):
# installed beside it, they would make mpicc, mpirun and <mpi.h> Open MPI's
# for every build on the machine. Each stays what it was, or becomes MPICH's
# where it did not exist yet; only preset openmpi uses Open MPI.
multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
declare -A mpi_keep=([mpi]=/usr/bin/mpicc.mpich [mpirun]=/usr/bin/mpirun.mpich
                     ["mpi-$multiarch"]="/usr/include/$multiarch/mpich")
for name in "${!mpi_keep[@]}"; do
  before=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p' || true)
  if [ -n "$before" ]; then mpi_keep[$name]=$before; fi
done
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
for name in "${!mpi_keep[@]}"; do
  now=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p' || true)
  want=${mpi_keep[$name]}
  # The list read whole, not piped into grep -q: grep leaving at its first
  # match could end update-alternatives by SIGPIPE, which pipefail counts
  # as no match (a fresh machine kept Open MPI's mpicc and mpirun so).
  choices=$(update-alternatives --list "$name" 2>/dev/null || true)
  if [ -n "$now" ] && [ "$now" != "$want" ] && grep -qxF "$want" <<<"$choices"; then
    echo "ito: keeping $want as $name"
    update-alternatives --set "$name" "$want" >/dev/null
  fi
done
