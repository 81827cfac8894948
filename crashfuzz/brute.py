"""Brute-force ground truth for litmus tests: an operational x86 machine with persistence steps.

This module shares no code with the crash-state model (:mod:`crashfuzz.model`,
:mod:`crashfuzz.states`) or with the litmus interpreter: it reads a parsed
:class:`~crashfuzz.litmus.LitmusTest` and explores every state of a small machine, so the tests
can hold the model to it. The machine, per thread:

* a store buffer of stores, non-temporal stores, flushes (clflush / clflushopt / clwb),
  sfences and pcommits, which leave it oldest first, except that a clflushopt or clwb may
  leave ahead of older entries other than an sfence, a pcommit, or a store, non-temporal
  store or flush of its own cache line (Intel SDM vol. 3 8.2.2: these flushes are ordered
  only with older writes to their line, fences and locked operations); loads forward from it
  (then from the write-combining buffer, then from memory) and may run ahead of it; mfence
  and xchg wait for it and for the write-combining buffer to drain;
* a write-combining buffer of non-temporal stores, which drain in any order (in order per
  location) and are not snooped: a store becomes visible when it leaves that buffer. A plain
  store may not leave the store buffer while a non-temporal store of its thread to its line
  is still in the write-combining buffer (self-snoop).

Persistence, per *chain* (a 64-byte line in ``line`` order mode, an 8-byte location in ``px86``
mode): the visible stores in visibility order, and how many of them have persisted. Persist
steps are nondeterministic and take one store at a time, oldest first.

* PDOM-2: visible is persistent.
* PDOM-1: a clflushopt / clwb leaving the store buffer records "chain c persisted >= n" (n: its
  line's visible stores) for its thread; a fence (an sfence leaving the store buffer, an mfence
  or xchg executing) can only complete when the thread's records hold and its write-combining
  buffer is empty, and clears them. A clflush can only leave the store buffer once its line's
  chains have persisted every visible store. A non-temporal store leaving the write-combining
  buffer persists together with everything before it in its chain.
* PDOM-0: two levels per chain, accepted (by the volatile WPQ) and persisted, each rising one
  store at a time, persisted <= accepted <= visible. Flushes, fences and drained non-temporal
  stores act as in PDOM-1 but on "accepted"; a pcommit leaving the store buffer records "every
  chain persisted >= its accepted count now" for its thread's next fence.

Hardware ordering (``order a -> b``): a store to ``b`` may not leave the store buffer or the
write-combining buffer while an earlier non-temporal store of its thread to ``a`` waits in the
write-combining buffer, and a state whose persisted stores include a store to ``b`` without
every store to ``a`` that became visible before it leaves no image (persist steps stay free, so
filtering the persisted sets gives exactly the sets the ordering allows).

A crash anywhere may leave the persisted image of any reachable state; a crash at the end, that
of any state where every thread has finished and both its buffers are empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .litmus import LitmusTest

Image = tuple[int, ...]
_LINE = 64
_ATOM = 8
_FLUSHES = ("clflush", "clflushopt", "clwb")


def _program(block: tuple[tuple, ...], out: list[tuple]) -> None:
    """Straight-line code: ``if`` becomes ("unless", reg, op, value, index after the body)."""
    for ins in block:
        if ins[0] != "if":
            out.append(ins)
            continue
        at = len(out)
        out.append(())
        _program(ins[4], out)
        out[at] = ("unless", ins[1], ins[2], ins[3], len(out))


class _Machine:
    """The state space of one test in one order mode and persistence domain."""

    def __init__(self, test: LitmusTest, mode: str, domain: str) -> None:
        if mode not in ("line", "px86"):
            raise ValueError(f"unknown order mode {mode!r}; use 'line' or 'px86'")
        if domain not in ("pdom0", "pdom1", "pdom2"):
            raise ValueError(f"unknown persistence domain {domain!r}; use pdom0, pdom1 or pdom2")
        self.domain = domain
        self.locs = sorted(test.locations)
        self.index = {name: i for i, name in enumerate(self.locs)}
        addr = [test.locations[name] for name in self.locs]
        self.line = [a // _LINE for a in addr]
        unit = _LINE if mode == "line" else _ATOM
        keys = sorted({a // unit for a in addr})
        self.chain = [keys.index(a // unit) for a in addr]
        self.nchains = len(keys)
        self.line_chains = {ln: tuple(sorted({self.chain[i] for i in range(len(addr)) if self.line[i] == ln}))
                            for ln in set(self.line)}
        self.progs = []
        for block in test.threads:
            flat: list[tuple] = []
            _program(block, flat)
            self.progs.append(tuple(flat))
        self.observe = [self.index[name] for name in test.observe]
        self.crash_end = test.crash == "end"
        self.after = {(self.index[a], self.index[b]) for a, b in test.order}
        self.before_of: dict[int, list[int]] = {}
        for a, b in sorted(self.after):
            self.before_of.setdefault(b, []).append(a)

    # -- helpers --------------------------------------------------------------------------------
    @staticmethod
    def _put(tup: tuple, i: int, v: object) -> tuple:
        return tup[:i] + (v,) + tup[i + 1:]

    @staticmethod
    def _value(regs: tuple, operand: int | str) -> int:
        return operand if isinstance(operand, int) else dict(regs).get(operand, 0)

    def _fence_ok(self, st: tuple, t: int) -> bool:
        """Thread t's records hold and its write-combining buffer is empty."""
        _, _, _, wc, _, _, acc, per, req, preq = st
        if wc[t]:
            return False
        level = acc if self.domain == "pdom0" else per
        if any(level[c] < n for c, n in enumerate(req[t])):
            return False
        return all(per[c] >= n for c, n in enumerate(preq[t]))

    def _cleared(self, st: tuple, t: int) -> tuple:
        zero = (0,) * self.nchains
        return st[:8] + (self._put(st[8], t, zero), self._put(st[9], t, zero))

    def _visible(self, st: tuple, li: int, v: int, drained: bool) -> tuple:
        """Store v to location li becomes visible (a drained NT store also persists/is accepted).

        A history entry is ``(location, value, seq)``; ``seq`` numbers the visible stores of all
        chains (only with ``order`` pairs, which need it: else 0, so fewer states)."""
        pcs, regs, sb, wc, mem, hist, acc, per, req, preq = st
        c = self.chain[li]
        seq = sum(len(x) for x in hist) if self.after else 0
        h = hist[c] + ((li, v, seq),)
        hist = self._put(hist, c, h)
        mem = self._put(mem, li, v)
        if self.domain == "pdom2" or (drained and self.domain == "pdom1"):
            per = self._put(per, c, len(h))
        elif drained:
            acc = self._put(acc, c, len(h))
        return (pcs, regs, sb, wc, mem, hist, acc, per, req, preq)

    def image(self, st: tuple) -> Image:
        hist, per = st[5], st[7]
        out = []
        for li in self.observe:
            c = self.chain[li]
            v = 0
            for lj, w, _ in hist[c][:per[c]]:
                if lj == li:
                    v = w
            out.append(v)
        return tuple(out)

    def ordered(self, st: tuple) -> bool:
        """Whether the persisted stores respect the ``order`` pairs: each persisted store to b
        comes with every store to a (for each pair a -> b) that became visible before it."""
        if not self.after:
            return True
        hist, per = st[5], st[7]
        for c in range(self.nchains):
            for lb, _, seq in hist[c][:per[c]]:
                for la in self.before_of.get(lb, ()):
                    ca = self.chain[la]
                    if any(lj == la and s < seq for lj, _, s in hist[ca][per[ca]:]):
                        return False
        return True

    def is_end(self, st: tuple) -> bool:
        pcs, _, sb, wc = st[:4]
        finished = all(pc >= len(p) for pc, p in zip(pcs, self.progs, strict=True))
        return finished and not any(sb) and not any(wc)

    # -- transitions ----------------------------------------------------------------------------
    def successors(self, st: tuple) -> list[tuple]:
        out: list[tuple] = []
        for t in range(len(self.progs)):
            out += self._drain_store_buffer(st, t)
            out += self._drain_write_combining(st, t)
            out += self._execute(st, t)
        out += self._persist(st)
        return out

    def _may_leave(self, buf: tuple, i: int) -> bool:
        """Whether store-buffer entry i may leave now: the oldest entry may; a clflushopt / clwb
        may pass older entries unless one is an sfence, a pcommit, or a store, non-temporal
        store or flush of its own cache line."""
        item = buf[i]
        if i == 0:
            return True
        if item[0] != "fl" or item[1] == "clflush":
            return False
        own = self.line[item[2]]
        for older in buf[:i]:
            if older[0] in ("sf", "pc"):
                return False
            if self.line[older[2] if older[0] == "fl" else older[1]] == own:
                return False
        return True

    def _drain_store_buffer(self, st: tuple, t: int) -> list[tuple]:
        out: list[tuple] = []
        for i in range(len(st[2][t])):
            if self._may_leave(st[2][t], i):
                out += self._leave(st, t, i)
        return out

    def _leave(self, st: tuple, t: int, i: int) -> list[tuple]:
        """Store-buffer entry i of thread t leaves the buffer (if it can)."""
        pcs, regs, sb, wc, mem, hist, acc, per, req, preq = st
        item = sb[t][i]
        st = (pcs, regs, self._put(sb, t, sb[t][:i] + sb[t][i + 1:]), wc, mem, hist, acc, per, req,
              preq)
        kind = item[0]
        if kind == "st":
            if any(self.line[lj] == self.line[item[1]] or (lj, item[1]) in self.after
                   for lj, _ in wc[t]):
                return []
            return [self._visible(st, item[1], item[2], False)]
        if kind == "nt":
            return [st[:3] + (self._put(wc, t, wc[t] + (item[1:],)),) + st[4:]]
        if kind == "sf":
            return [self._cleared(st, t)] if self._fence_ok(st, t) else []
        if self.domain == "pdom2":
            return [st]
        if kind == "pc":
            if self.domain == "pdom0":
                rec = tuple(max(a, b) for a, b in zip(preq[t], acc, strict=True))
                return [st[:9] + (self._put(preq, t, rec),)]
            return [st]
        chains = self.line_chains[self.line[item[2]]]
        level = acc if self.domain == "pdom0" else per
        if item[1] == "clflush":
            return [st] if all(level[c] >= len(hist[c]) for c in chains) else []
        rec = list(req[t])
        for c in chains:
            rec[c] = max(rec[c], len(hist[c]))
        return [st[:8] + (self._put(req, t, tuple(rec)), preq)]

    def _drain_write_combining(self, st: tuple, t: int) -> list[tuple]:
        wc = st[3]
        out = []
        for i, (li, v) in enumerate(wc[t]):
            if any(lj == li or (lj, li) in self.after for lj, _ in wc[t][:i]):
                continue
            rest = st[:3] + (self._put(wc, t, wc[t][:i] + wc[t][i + 1:]),) + st[4:]
            out.append(self._visible(rest, li, v, True))
        return out

    @staticmethod
    def _view(st: tuple, t: int, li: int) -> int:
        """What thread ``t`` reads at location ``li``: its newest buffered store, else memory."""
        sb, wc, mem = st[2], st[3], st[4]
        v = mem[li]
        for lj, w in wc[t]:
            if lj == li:
                v = w
        for b in sb[t]:
            if b[0] in ("st", "nt") and b[1] == li:
                v = b[2]
        return v

    def _execute(self, st: tuple, t: int) -> list[tuple]:
        pcs, regs, sb, wc, mem, hist, acc, per, req, preq = st
        prog = self.progs[t]
        if pcs[t] >= len(prog):
            return []
        ins = prog[pcs[t]]
        op = ins[0]
        nxt = self._put(pcs, t, pcs[t] + 1)
        item: tuple | None = None
        if op == "store":
            item = ("st", self.index[ins[1]], self._value(regs[t], ins[2]))
        elif op == "pstore":  # a partial store: merged into the thread's view of the word
            li, mask = self.index[ins[1]], ins[3]
            item = ("st", li, (self._view(st, t, li) & ~mask) | (self._value(regs[t], ins[2]) & mask))
        elif op == "ntstore":
            item = ("nt", self.index[ins[1]], self._value(regs[t], ins[2]))
        elif op == "flush":
            item = ("fl", ins[1], self.index[ins[2]])
        elif op == "sfence":
            item = ("sf",)
        elif op == "pcommit":
            item = ("pc",)
        if item is not None:
            return [(nxt, regs, self._put(sb, t, sb[t] + (item,)), wc, mem, hist, acc, per, req, preq)]
        if op == "load":
            v = self._view(st, t, self.index[ins[2]])
            r = tuple(sorted({**dict(regs[t]), ins[1]: v}.items()))
            return [(nxt, self._put(regs, t, r), sb, wc, mem, hist, acc, per, req, preq)]
        if op == "unless":
            holds = (dict(regs[t]).get(ins[1], 0) == self._value(regs[t], ins[3])) == (ins[2] == "=")
            target = pcs[t] + 1 if holds else ins[4]
            return [(self._put(pcs, t, target), regs, sb, wc, mem, hist, acc, per, req, preq)]
        if op not in ("mfence", "xchg"):
            raise ValueError(f"brute force: unknown instruction {ins!r}")
        if sb[t] or not self._fence_ok(st, t):
            return []
        st = self._cleared((nxt,) + st[1:], t)
        if op == "mfence":
            return [st]
        li = self.index[ins[1]]
        old = st[4][li]
        if ins[3] is not None:
            r = tuple(sorted({**dict(regs[t]), ins[3]: old}.items()))
            st = (st[0], self._put(regs, t, r)) + st[2:]
        return [self._visible(st, li, self._value(regs[t], ins[2]), False)]

    def _persist(self, st: tuple) -> list[tuple]:
        hist, acc, per = st[5], st[6], st[7]
        out = []
        if self.domain == "pdom1":
            for c in range(self.nchains):
                if per[c] < len(hist[c]):
                    out.append(st[:7] + (self._put(per, c, per[c] + 1),) + st[8:])
        elif self.domain == "pdom0":
            for c in range(self.nchains):
                if acc[c] < len(hist[c]):
                    out.append(st[:6] + (self._put(acc, c, acc[c] + 1),) + st[7:])
                if per[c] < acc[c]:
                    out.append(st[:7] + (self._put(per, c, per[c] + 1),) + st[8:])
        return out

    def start(self) -> tuple:
        n = len(self.progs)
        empty = tuple(() for _ in range(n))
        zero = (0,) * self.nchains
        return ((0,) * n, empty, empty, empty, (0,) * len(self.locs), ((),) * self.nchains,
                zero, zero, (zero,) * n, (zero,) * n)


def brute_images(test: LitmusTest, mode: str, domain: str) -> frozenset[Image]:
    """The exact set of images (over ``test.observe``) that may survive a crash."""
    m = _Machine(test, mode, domain)
    seen = {m.start()}
    stack = [m.start()]
    images: set[Image] = set()
    while stack:
        st = stack.pop()
        if (not m.crash_end or m.is_end(st)) and m.ordered(st):
            images.add(m.image(st))
        for nxt in m.successors(st):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return frozenset(images)


def brute_litmus(test: LitmusTest) -> dict[tuple[str, str], frozenset[Image]]:
    """:func:`brute_images` for every ``(mode, domain)`` the test names."""
    return {(mode, dom): brute_images(test, mode, dom) for mode in test.modes for dom in test.domains}
