"""Reading a child process's output with a ceiling.

``subprocess.communicate`` keeps everything a child prints: a mind that prints
200 MB took dream to 647 MB resident. ``Capture`` feeds the child its input
and reads its stdout and stderr side by side, like communicate, but keeps at
most ``limit`` bytes of stdout (reading past that stops at once: the caller
kills the child and treats the output as refused) and only the last
``stderr_limit`` bytes of stderr (what a journal line quotes is the end).
Standard library only.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time

STDERR_LIMIT = 64 * 1024
_CHUNK = 64 * 1024

EXITED, TIMEOUT, OVERFLOW = "exited", "timeout", "overflow"


class Capture:
    """The output of ``proc`` (started with ``stdin``, ``stdout`` and ``stderr`` pipes), read
    by ``until``; ``stdout`` and ``stderr`` hold what was kept. Call ``close`` when done."""

    def __init__(self, proc: subprocess.Popen, data: bytes, limit: int, stderr_limit: int = STDERR_LIMIT):
        self.proc, self.limit, self.stderr_limit = proc, limit, stderr_limit
        self._out, self._err = bytearray(), bytearray()
        self._input, self._sent = memoryview(data), 0
        self._selector = selectors.DefaultSelector()
        if proc.stdin is not None:
            if data:
                os.set_blocking(proc.stdin.fileno(), False)
                self._selector.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                self._selector.register(stream, selectors.EVENT_READ)

    @property
    def stdout(self) -> bytes:
        return bytes(self._out)

    @property
    def stderr(self) -> bytes:
        return bytes(self._err)

    def until(self, timeout: float) -> str:
        """Feed and read until the child has closed its output and exited (``exited``), ``timeout``
        seconds have passed (``timeout``), or stdout went over the limit (``overflow``).

        May be called again after ``timeout`` (once the caller has killed the
        child) to read what is left. Raises OSError only for a failed read.
        """
        deadline = time.monotonic() + timeout
        while self._selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return TIMEOUT
            for key, _ in self._selector.select(remaining):
                if key.fileobj is self.proc.stdin:
                    self._feed(key)
                elif not self._read(key):
                    return OVERFLOW
        try:
            self.proc.wait(max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            return TIMEOUT
        return EXITED

    def _feed(self, key: selectors.SelectorKey) -> None:
        try:
            self._sent += os.write(key.fd, self._input[self._sent : self._sent + _CHUNK])
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionResetError):  # the child stopped reading: it has what it took
            self._sent = len(self._input)
        if self._sent >= len(self._input):
            self._drop(key)

    def _read(self, key: selectors.SelectorKey) -> bool:
        """Read one chunk; False when stdout went over the limit."""
        chunk = os.read(key.fd, _CHUNK)
        if not chunk:
            self._drop(key)
            return True
        if key.fileobj is self.proc.stdout:
            if len(self._out) + len(chunk) > self.limit:
                return False
            self._out += chunk
        else:
            self._err += chunk
            if len(self._err) > self.stderr_limit:
                del self._err[: len(self._err) - self.stderr_limit]
        return True

    def _drop(self, key: selectors.SelectorKey) -> None:
        self._selector.unregister(key.fileobj)
        key.fileobj.close()

    def close(self) -> None:
        """Close every pipe still open (the child, if alive, sees them closed)."""
        for key in list(self._selector.get_map().values()):
            self._drop(key)
        self._selector.close()
