# SPDX-License-Identifier: Apache-2.0
# Spack recipe for ito, kept in ito's repository (packaging/spack is a Spack
# package repository: `spack repo add packaging/spack`). README.md, "Install".

import os

from spack.package import *

# This checkout (packaging/spack/packages/ito/ -> the repository root), unless
# ITO_GIT_URL names another: ito has no published repository URL or release
# tarball yet, so @develop clones the repository this recipe came with.
_ito_checkout = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))


class Ito(CMakePackage):
    """ito: very many, very cheap user-level threads. A C++20 runtime, with a
    C API, for user-level threads scheduled M:N on worker OS threads by work
    stealing; a POSIX-thread layer (and libito-preload.so for unmodified
    binaries), a distributed mode over MPI (ito::dist) and split-stack
    (lazy/fair_use) stack policies."""

    # No published homepage yet: add `homepage = "..."` with the repository's
    # public address (and let `git` default to it).
    git = os.environ.get("ITO_GIT_URL", "file://" + _ito_checkout)

    license("Apache-2.0")

    # git main. No tag or release tarball exists yet: when 0.1.0 is tagged,
    # add version("0.1.0", tag="v0.1.0", commit="<its commit>").
    version("develop", branch="main")

    variant("shared", default=True, description="Build and install libito.so (libito.a always)")
    variant("dist", default=False, description="The distributed mode over MPI (ito::dist)")
    variant(
        "split",
        default=True,
        when="target=x86_64:",
        description="The lazy/fair_use stack policies on split stacks (ito::split_stack)",
    )

    # Linux on x86-64 or aarch64: the context switch is per architecture
    # (src/arch), and the runtime uses Linux system calls (futex, epoll, ...).
    requires("platform=linux", msg="ito runs on Linux only")
    requires(
        "target=x86_64:",
        "target=aarch64:",
        policy="one_of",
        msg="ito has context switches for x86-64 and aarch64 only",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")
    generator("ninja")  # as the project's presets (CMakePackage adds ninja)

    depends_on("mpi", when="+dist")
    # -fsplit-stack is GCC's; ld.bfd ignores split-stack notes, so gold links
    # the library's split programs, and every program a user links with
    # ito::split_stack (hence also a run dependency).
    conflicts("%clang", when="+split", msg="+split needs GCC's -fsplit-stack")
    depends_on("binutils+gold", type=("build", "run"), when="+split")

    # The test suite (spack install --test=root ito): GoogleTest, and the
    # tools some tests run (pkg-config for the install tests, gdb for the gdb
    # helper's test; the others skip or are left out without theirs).
    depends_on("googletest", type="test")
    depends_on("pkgconfig", type="test")

    def cmake_args(self):
        args = [
            self.define_from_variant("ITO_SHARED", "shared"),
            self.define("ITO_DIST", "ON" if self.spec.satisfies("+dist") else "OFF"),
            self.define(
                "ITO_SPLIT_STACK", "ON" if self.spec.satisfies("+split") else "OFF"
            ),
            self.define("ITO_BUILD_TESTS", self.run_tests),
            # The examples register tests too; the benchmark driver is not
            # part of the package.
            self.define("ITO_BUILD_EXAMPLES", self.run_tests),
            self.define("ITO_BUILD_BENCH", False),
            # Warnings are the project's business, not a reason to fail an
            # install with another compiler.
            self.define("ITO_WERROR", False),
        ]
        return args

    def check(self):
        # ctest rather than the generator's `test` target, with the output of
        # the tests that fail.
        with working_dir(self.build_directory):
            ctest = Executable(self.spec["cmake"].prefix.bin.ctest)
            ctest("--output-on-failure", "-j", str(make_jobs))

    @property
    def libs(self):
        return find_libraries(
            "libito", root=self.prefix, shared=self.spec.satisfies("+shared"), recursive=True
        )
