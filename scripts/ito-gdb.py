# SPDX-License-Identifier: Apache-2.0
# gdb helper for ito: the ULTs of a running (or stopped) program.
#
#   (gdb) source /usr/local/share/ito/ito-gdb.py     # or scripts/ito-gdb.py
#   (gdb) info ito-ults          every live ULT: id, state, what it waits on
#   (gdb) ito-ult bt ID          the backtrace of a suspended ULT
#
# It reads the ito_debug table the runtime exports (src/sched/debug_table.cpp):
# addresses and field offsets as plain C data, so it needs no debug
# information of ito's and works on release builds.
import gdb

JOIN_RUNNING, JOIN_FINISHED, JOIN_DETACHED, JOIN_RELEASED = 0, 1, 2, 4
WORD = 8


def _u64(addr):
    return int(gdb.selected_inferior().read_memory(addr, 8).cast("Q")[0])


def _u32(addr):
    return int(gdb.selected_inferior().read_memory(addr, 4).cast("I")[0])


def _cstring(addr):
    if addr == 0:
        return None
    data = bytes(gdb.selected_inferior().read_memory(addr, 96))
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


class Table:
    FIELDS = ["worker_index", "worker_current", "worker_registry_head", "ult_sp", "ult_id",
              "ult_join_state", "ult_blocked_in", "ult_blocked_on", "ult_registry_next",
              "ult_stack_lo", "ult_stack_hi", "ult_join_target", "context_words"]

    def __init__(self):
        sym = gdb.lookup_global_symbol("ito_debug") or gdb.lookup_symbol("ito_debug")[0]
        if sym is None:
            try:
                base = int(gdb.parse_and_eval("(unsigned long)&ito_debug"))
            except gdb.error:
                raise gdb.GdbError("ito: no ito_debug symbol: is this program linked with ito?")
        else:
            base = int(sym.value().address)
        self.version = _u32(base)
        if self.version != 2:
            raise gdb.GdbError("ito: ito_debug version %d, this helper knows 2" % self.version)
        self.worker_count = _u32(base + 4)
        self.workers = _u64(base + 8)
        self.main_ult = _u64(base + 16)
        for i, name in enumerate(self.FIELDS):
            setattr(self, name, _u32(base + 24 + 4 * i))

    def workers_list(self):
        return [_u64(self.workers + WORD * i) for i in range(self.worker_count)]

    def ults(self):
        """(descriptor address, id, state text) for every live ULT."""
        running = {}
        for w in self.workers_list():
            cur = _u64(w + self.worker_current)
            if cur:
                running[cur] = _u32(w + self.worker_index)
        self.registered = set()
        for w in self.workers_list():
            u = _u64(w + self.worker_registry_head)
            while u:
                self.registered.add(u)
                u = _u64(u + self.ult_registry_next)
        out = []
        for w in self.workers_list():
            u = _u64(w + self.worker_registry_head)
            while u:
                state = self.describe(u, running)
                if state is not None:
                    out.append((u, _u64(u + self.ult_id), state))
                u = _u64(u + self.ult_registry_next)
        if self.main_ult:
            out.insert(0, (self.main_ult, 0, self.describe(self.main_ult, running) or "main ULT"))
        return out

    def describe(self, u, running):
        s = _u64(u + self.ult_join_state)
        if s == JOIN_RELEASED:
            return None  # a cached descriptor, no ULT
        detached = " (detached)" if s == JOIN_DETACHED else ""
        if s & 1:
            return "finished, not joined yet"
        if u in running:
            return "running on worker %d%s" % (running[u], detached)
        # A joiner: its join_target is a live descriptor whose state names it.
        target = _u64(u + self.ult_join_target)
        if target in self.registered and _u64(target + self.ult_join_state) == u:
            return "blocked in join of ULT %d%s" % (_u64(target + self.ult_id), detached)
        what = _cstring(_u64(u + self.ult_blocked_in))
        on = _u64(u + self.ult_blocked_on)
        if what:
            return "blocked in %s%s%s" % (what, " on 0x%x" % on if on else "", detached)
        return "runnable, waiting for a worker" + detached

    def find(self, ult_id):
        for u, i, state in self.ults():
            if i == ult_id:
                return u, state
        raise gdb.GdbError("ito: no live ULT %d" % ult_id)


class InfoUlts(gdb.Command):
    """List the live ULTs of the ito runtime: id, state, what each waits on."""

    def __init__(self):
        super().__init__("info ito-ults", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        t = Table()
        if t.worker_count == 0:
            print("ito: no runtime is running")
            return
        ults = t.ults()
        print("ito: %d workers, %d live ULTs" % (t.worker_count, len(ults)))
        for u, i, state in ults:
            print("  ULT %-8d %s   [descriptor 0x%x]" % (i, state, u))


class UltCommand(gdb.Command):
    """ito-ult bt ID: the backtrace of the suspended ULT with that id."""

    def __init__(self):
        super().__init__("ito-ult", gdb.COMMAND_STACK, prefix=True)


def _saved_registers(sp):
    """The registers of a context suspended at sp (save_context in
    src/arch/context_<arch>.S), as gdb names them."""
    arch = gdb.selected_inferior().architecture().name()
    if arch.startswith("aarch64"):
        # FPCR and a pad word, d8-d15, x19-x28, fp, lr; the caller's sp above.
        regs = {"x%d" % (19 + i): _u64(sp + 80 + 8 * i) for i in range(10)}
        regs.update({"x29": _u64(sp + 160), "x30": _u64(sp + 168), "pc": _u64(sp + 168),
                     "sp": sp + 176})
        return regs
    if "x86-64" in arch:
        # Control words and split-stack limit, r15 ... rbp, the return address.
        return {"r15": _u64(sp + 16), "r14": _u64(sp + 24), "r13": _u64(sp + 32),
                "r12": _u64(sp + 40), "rbx": _u64(sp + 48), "rbp": _u64(sp + 56),
                "pc": _u64(sp + 64), "sp": sp + 72}
    raise gdb.GdbError("ito: no saved-context layout for architecture %s" % arch)


class UltBacktrace(gdb.Command):
    """ito-ult bt ID: the backtrace of the suspended ULT with that id."""

    def __init__(self):
        super().__init__("ito-ult bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        try:
            ult_id = int(arg.split()[0], 0)
        except (IndexError, ValueError):
            raise gdb.GdbError("usage: ito-ult bt ID")
        t = Table()
        u, state = t.find(ult_id)
        if state.startswith("running on worker"):
            raise gdb.GdbError("ito: ULT %d is running: use `thread` and `bt` on its worker" % ult_id)
        regs = _saved_registers(_u64(u + t.ult_sp))
        print("ito: ULT %d, %s" % (ult_id, state))
        frame = gdb.selected_frame()
        gdb.execute("select-frame 0")
        saved = {r: int(gdb.parse_and_eval("$" + r)) for r in regs}
        try:
            for r, v in regs.items():
                gdb.execute("set $%s = %d" % (r, v), to_string=True)
            gdb.execute("bt", from_tty)
        finally:
            for r, v in saved.items():
                gdb.execute("set $%s = %d" % (r, v), to_string=True)
            frame.select()


InfoUlts()
UltCommand()
UltBacktrace()
