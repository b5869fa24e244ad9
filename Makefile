# SPDX-License-Identifier: Apache-2.0
# Two commands on a fresh Debian 12 machine: `make demo` and `make test`.
# Each installs what is missing (apt-get, as root), configures and builds.
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
CTEST_ARGS ?=

.PHONY: all deps demo test bench asan-test tsan-test aarch64-test openmpi-test install deb clean release debug asan tsan
all: release

deps:
	@scripts/install-deps.sh

build/%/build.ninja: | deps
	cmake --preset $*

release debug asan tsan: %: build/%/build.ninja
	cmake --build build/$* -j $(JOBS)

# Builds only what the demo runs (ito, the benchmark driver and what it
# launches), not the test suite; ends with a one-screen summary.
demo: build/release/build.ninja
	cmake --build build/release -j $(JOBS) --target ito-bench
	build/release/bench/ito-bench demo
	@scripts/bench-plots.sh --quick --out build/release/plots > build/release/plots.log 2>&1 \
	  && echo "plots (workers 1..$$(nproc), small sizes): build/release/plots/*.svg; full ones: scripts/bench-plots.sh" \
	  || echo "plots: scripts/bench-plots.sh failed, see build/release/plots.log"

bench: release
	build/release/bench/ito-bench fib --n 35 --runs 5
	build/release/bench/ito-bench create-join --runs 5
	build/release/bench/ito-bench yield --runs 5
	build/release/bench/ito-bench mutex --runs 5
	build/release/bench/ito-bench blocked --runs 3

test: debug
	ctest --preset debug -j $(JOBS) $(CTEST_ARGS)

asan-test: asan
	ctest --preset asan -j $(JOBS) $(CTEST_ARGS)

tsan-test: tsan
	ctest --preset tsan -j $(JOBS) $(CTEST_ARGS)

# Cross-built for aarch64, run under qemu-user: the `emulated` subset of the
# suite (tests/CMakeLists.txt), and ito-bench must build (README: aarch64).
aarch64-test:
	@scripts/install-deps.sh aarch64
	cmake --preset aarch64
	cmake --build build/aarch64 -j $(JOBS) --target ito_emulated_tests ito-bench
	ctest --preset aarch64 -j $(JOBS) -L emulated $(CTEST_ARGS)

# The distributed suite (label dist) and ito-bench-dsm over Open MPI, which
# install-deps puts beside MPICH (the default MPI stays MPICH's): preset
# openmpi builds only ito::dist's programs. docs/DISTRIBUTED.md, "Open MPI".
openmpi-test: | deps
	cmake --preset openmpi
	cmake --build build/openmpi -j $(JOBS) --target ito_dist_tests ito-bench-dsm
	ctest --preset openmpi -j $(JOBS) -L dist $(CTEST_ARGS)

install: release
	cmake --install build/release --prefix $(PREFIX)

# The Debian packages of the release build (cmake/packaging.cmake): ito, and
# ito-dist where MPI was found, in build/release. README.md, "Install".
deb: release
	cd build/release && cpack -G DEB
	@ls -1 build/release/*.deb

clean:
	rm -rf build
