# SPDX-License-Identifier: Apache-2.0
# Two commands on a fresh Debian 12 machine: `make demo` and `make test`.
# Each installs what is missing (apt-get, as root), configures and builds.
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
CTEST_ARGS ?=

.PHONY: all deps demo test bench asan-test tsan-test install clean
all: release

deps:
	@scripts/install-deps.sh

build/%/build.ninja: | deps
	cmake --preset $*

release debug asan tsan: %: build/%/build.ninja
	cmake --build build/$* -j $(JOBS)

demo: release
	build/release/bench/ito-bench demo

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

install: release
	cmake --install build/release --prefix $(PREFIX)

clean:
	rm -rf build
