"""Writes to long-term memory off the tick: queued in the apply phase, applied between ticks.

A ``MemoryWriter`` is the ``runtime.longterm.LongTermStore`` a ``TickLoop`` is given
instead of the memory itself, and the way to use an embedder slower than a tick (the
sentence model of ``runtime.agent.sentence_model`` takes about 10 ms a text, 2 ms a text
in a batch). Its ``remember`` checks the fact (a text over the memory's
``Retention.max_chars`` is refused at once) and queues it, in constant time whatever the
memory holds and whatever the embedder costs, and answers ``Queued`` (reason ``queued``); the
loop's ``remembered`` event says so. ``flush`` applies the queue in order, in one
transaction with batched embedding, and hands each outcome (stored, duplicate,
superseded, ...) to ``on_written``. Who flushes:

- a simulation (or any loop on a simulated clock) calls ``flush`` between ticks, e.g.
  as a loop hook (``after_apply``): the outcomes, and so the run, are the same tick for
  tick, and a replay needs nothing from the file;
- a robot on a wall clock starts the background writer (``start()``): a thread that
  flushes while the loop sleeps, so no write ever lengthens a tick.

Nothing queued is lost at shutdown: ``close`` stops the thread and flushes what is left;
a write that comes after (or races) ``close`` is refused, never queued for no one. A
writer made with ``journal=True`` also survives a crash: each write goes first to the
memory file's journal (``LongTermMemory.enqueue``, a constant-time insert), which the
next open of the file applies. Pickled (a checkpoint), a writer keeps its queue and
drops its memory, which whoever restores it gives back (``attach``).

Thread safety, and the two races it closes: a journaled write is put in the journal and
counted as this writer's under one lock, so a flush on another thread that applies it
at once still finds it this writer's (before, the outcome was dropped as another
writer's and ``pending`` never fell back to 0); the background writer's own connection
does not apply the journal when it opens, so writes queued before ``start`` are handed
to ``on_written`` too. Flushes run one at a time and hand their outcomes over in the
order they were applied; ``stop`` closes the thread's connection inside that turn, so a
concurrent ``flush`` never meets a closed connection.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import structlog

from runtime.agent.long_term import (
    LongTermMemory,
    Queued,
    Remembered,
    checked_metadata,
    checked_scope,
)
from runtime.cabin import MemoryWrite
from runtime.errors import SettingError

__all__ = ["MemoryWriter"]

_log = structlog.get_logger("tickwork.memory_writer")

Written = Callable[[MemoryWrite, Remembered], None]


class MemoryWriter:
    """Queues long-term writes and applies them between ticks (see the module docstring)."""

    _derived = ("memory", "on_written", "_thread", "_writer_memory")
    """What a checkpoint does not hold: the memory file and the callback (the program
    that resumes gives them), and a background thread (a checkpointed run has none)."""
    _state_types: ClassVar[dict[str, Any]] = {
        "journal": bool,
        "batch": int,
        "queued": int,
        "written": int,
        "_queue": deque[tuple[int, MemoryWrite]],
        "_mine": dict[int, MemoryWrite],
        "_tickets": int,
        "closed": bool,
    }

    def __init__(
        self,
        memory: LongTermMemory,
        *,
        on_written: Written | None = None,
        journal: bool = False,
        batch: int = 256,
    ) -> None:
        if not isinstance(memory, LongTermMemory):
            raise TypeError(f"memory must be a LongTermMemory, got {type(memory).__name__}")
        if journal and memory.path == ":memory:":
            raise SettingError("a journal needs a memory file, not ':memory:'")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise SettingError(f"batch must be an int >= 1, got {batch!r}")
        self.memory: LongTermMemory | None = memory
        self.on_written = on_written
        self.journal = journal
        self.batch = batch
        self.queued = 0
        self.written = 0
        self._queue: deque[tuple[int, MemoryWrite]] = deque()
        self._mine: dict[int, MemoryWrite] = {}  # journal tickets of this writer
        self._tickets = 0
        self._lock = threading.Lock()
        self._flushing = threading.RLock()  # an ``on_written`` may flush again
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer_memory: LongTermMemory | None = None
        self.closed = False

    # -- the store protocol ---------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        stamp: float | None = None,
    ) -> Queued:
        """Check ``content`` and queue it; it is applied at the next ``flush``."""
        if not isinstance(content, str) or not content.strip():
            raise SettingError(f"a memory needs content (a non-empty string), got {content!r}")
        if self.memory is not None:  # too long a text is refused now, not at the flush
            self.memory.retention.check_size(content.strip())
        _, scope_map = checked_scope(scope)
        write = MemoryWrite(content, scope_map, checked_metadata(metadata), stamp)
        if self.journal:
            memory = self._memory()
            with self._lock:  # journaled and made mine in one step (see the module doc)
                self._check_open()
                queued = memory.enqueue(
                    content, scope=scope_map, metadata=write.metadata, stamp=stamp
                )
                self._mine[queued.ticket] = write
                self.queued += 1
        else:
            with self._lock:
                self._check_open()
                self._tickets += 1
                queued = Queued(self._tickets)
                self._queue.append((queued.ticket, write))
                self.queued += 1
        self._wake.set()
        return queued

    @property
    def pending(self) -> int:
        """Writes queued and not yet applied."""
        with self._lock:
            return len(self._queue) + len(self._mine)

    # -- applying -------------------------------------------------------------------------

    def flush(self) -> tuple[tuple[MemoryWrite, Remembered], ...]:
        """Apply every queued write, in order; each with its outcome (also handed to
        ``on_written``, in the same order, before another flush may begin)."""
        with self._flushing:
            memory = self._writer_memory or self._memory()
            done: list[tuple[MemoryWrite, Remembered]] = []
            try:
                if self.journal:
                    for ticket, outcome in memory.flush():
                        with self._lock:
                            write = self._mine.pop(ticket, None)
                        if write is not None:  # another writer's journal rows are its own
                            done.append((write, outcome))
                else:
                    self._apply_queue(memory, done)
            finally:  # what was applied is reported, even when a later batch failed
                self.written += len(done)
                if self.on_written is not None:
                    for write, outcome in done:
                        self.on_written(write, outcome)
        return tuple(done)

    def _apply_queue(
        self, memory: LongTermMemory, done: list[tuple[MemoryWrite, Remembered]]
    ) -> None:
        while True:
            with self._lock:
                batch = [self._queue.popleft() for _ in range(min(self.batch, len(self._queue)))]
            if not batch:
                return
            writes = [w for _, w in batch]
            try:
                outcomes = memory.remember_many(writes)
            except BaseException:
                with self._lock:  # nothing of a failed batch is lost
                    self._queue.extendleft(reversed(batch))
                raise
            done.extend(zip(writes, outcomes, strict=True))

    def after_apply(self, result: object) -> None:
        """A loop hook: flush between ticks."""
        if self._thread is None:
            self.flush()

    def before_freeze(self, tick: int, now: float) -> None:
        """A loop hook: nothing to do before a freeze."""

    # -- the background writer ------------------------------------------------------------

    def start(self, *, interval: float = 0.05) -> None:
        """Flush from a thread of its own (woken by each write, at least every
        ``interval`` seconds) instead of between ticks."""
        if self._thread is not None:
            raise SettingError("the background writer is already running")
        self._check_open()
        memory = self._memory()
        if self.journal:  # its own connection: the tick's inserts never wait on its lock;
            # it leaves the journal alone on opening, so this writer's rows come back here
            self._writer_memory = memory.reopened(recover=False)
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, args=(interval,), name="tickwork-memory-writer", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the background writer, after it applied what was queued."""
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        self._wake.set()
        thread.join()
        self._thread = None
        with self._flushing:  # no flush holds the thread's connection while it closes
            try:
                self.flush()
            finally:
                own, self._writer_memory = self._writer_memory, None
                if own is not None:
                    own.close()

    def close(self) -> None:
        """Stop the background writer and apply everything still queued; later writes
        are refused (``SettingError``)."""
        with self._lock:  # a write either is queued before this, or refused after it
            self.closed = True
        self.stop()
        if self.memory is not None:
            self.flush()

    def _run(self, interval: float) -> None:
        while not self._stop.is_set():
            self._wake.wait(interval)
            self._wake.clear()
            try:
                self.flush()
            except Exception as exc:  # a broken file must not kill the writer silently
                _log.error("memory_writer_failed", error_type=type(exc).__name__, error=str(exc))

    def attach(self, memory: LongTermMemory | None) -> None:
        """Give a restored writer its memory again."""
        self.memory = memory

    def _check_open(self) -> None:
        if self.closed:
            raise SettingError("this writer is closed: nothing more can be queued")

    def _memory(self) -> LongTermMemory:
        if self.memory is None:
            raise SettingError("this writer has no memory (a restored writer needs attach())")
        return self.memory
