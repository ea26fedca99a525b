"""Headless Chromium for looking at rendered reports the way a person would (tests, screenshots).

Flags keep it offline and stateless: no first-run UI, no background downloads, a throwaway
profile, and a virtual-time budget so the report's JavaScript has rendered before the DOM
is dumped or the screenshot taken.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_TRAMPOLINE = ("import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
               "os.execvp(sys.argv[3], sys.argv[3:])")


class BrowserNotFound(RuntimeError):
    """No Chromium on PATH; the message says how to install it."""


def find_chromium() -> str:
    """Path of a Chromium (Debian package ``chromium``) or Chrome binary; installed by the bootstrap if missing."""
    from mirrordrill.primitives.bootstrap import Bootstrap, BootstrapError
    try:
        return Bootstrap().chromium()
    except BootstrapError as e:
        raise BrowserNotFound(str(e)) from None


@dataclass(frozen=True)
class Browser:
    """One headless Chromium binary; each call runs a fresh, isolated browser process."""

    binary: str
    budget_ms: int = 15000
    window: tuple[int, int] = (1400, 1800)

    @classmethod
    def find(cls, **kwargs) -> Browser:
        return cls(find_chromium(), **kwargs)

    def _run(self, url: str, extra: list[str], timeout_s: float) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="mirrordrill-chromium-") as profile:
            cmd = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}",
                   f"--window-size={self.window[0]},{self.window[1]}",
                   f"--virtual-time-budget={self.budget_ms}", "--run-all-compositor-stages-before-draw",
                   *extra, url]
            try:
                return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
            finally:
                remove_singleton_folder(Path(profile))

    def dump_dom(self, url: str, timeout_s: float = 120) -> str:
        """The DOM after the page's scripts ran, serialised as HTML."""
        proc = self._run(url, ["--dump-dom"], timeout_s)
        if proc.returncode != 0 or not proc.stdout:
            raise RuntimeError(f"chromium --dump-dom {url} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return proc.stdout

    def screenshot(self, url: str, png: Path, timeout_s: float = 120) -> Path:
        """A PNG of the page as rendered."""
        png = Path(png).resolve()
        proc = self._run(url, [f"--screenshot={png}"], timeout_s)
        if not png.exists():
            raise RuntimeError(f"chromium --screenshot {url} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return png

    def evaluate(self, url: str, expression: str, timeout_s: float = 120) -> object:
        """Open ``url`` and return the JSON value of a JavaScript ``expression`` (awaited if a promise).

        Speaks the DevTools protocol over ``--remote-debugging-pipe`` (fds 3 and 4), so no
        port is opened and nothing beyond the standard library is needed.
        """
        with tempfile.TemporaryDirectory(prefix="mirrordrill-chromium-") as profile:
            pipe = _DevToolsPipe.start(self._pipe_command(profile), Path(profile) / "chromium.stderr", timeout_s)
            try:
                return _evaluate_in(pipe, url, expression)
            finally:
                pipe.close()
                remove_singleton_folder(Path(profile))

    def _pipe_command(self, profile: str) -> list[str]:
        return [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}",
                f"--window-size={self.window[0]},{self.window[1]}", "--remote-debugging-pipe", "about:blank"]


SINGLETON_FOLDER_PREFIX = "org.chromium.Chromium."


def remove_singleton_folder(profile: Path) -> None:
    """Delete the folder Chromium made in ``$TMPDIR`` for its singleton socket, once it has exited.

    The profile's ``SingletonSocket`` link names it; Chromium left it in /tmp after every page
    it rendered. Only a folder of Chromium's own naming, named by that link, is deleted. (Making
    ``$TMPDIR`` the profile instead put the socket's path over the 108 bytes a Unix socket's path
    may have, with a long ``$TMPDIR``.)"""
    try:
        socket = Path(os.readlink(profile / "SingletonSocket"))
    except OSError:
        return
    folder = socket.parent
    if folder.name.startswith(SINGLETON_FOLDER_PREFIX) and folder.parent.resolve() == Path(tempfile.gettempdir()).resolve():
        shutil.rmtree(folder, ignore_errors=True)


class _DevToolsPipe:
    """A headless Chromium spoken to over its DevTools pipe, every answer due by one deadline."""

    def __init__(self, proc: subprocess.Popen, to_chrome: int, from_chrome: int, errors: Path, deadline: float,
                 timeout_s: float) -> None:
        self.proc, self.to_chrome, self.from_chrome, self.errors = proc, to_chrome, from_chrome, errors
        self.deadline, self.timeout_s = deadline, timeout_s
        self.buffer, self.ids = b"", iter(range(1, 1_000_000))

    @classmethod
    def start(cls, cmd: list[str], errors: Path, timeout_s: float) -> _DevToolsPipe:
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # Move the child's ends above 4 so putting one on 3 cannot overwrite the other.
        to_chrome_r, from_chrome_w = (_high_fd(to_chrome_r), _high_fd(from_chrome_w))
        # Chromium reads commands on fd 3 and answers on fd 4; a tiny Python trampoline puts the
        # pipes there and execs it (sh cannot name descriptors above 9; preexec_fn is not thread-safe).
        with open(errors, "wb") as err:
            # its own process group: Chromium's helper processes (zygote, renderer) go with it
            proc = subprocess.Popen([sys.executable, "-c", _TRAMPOLINE, str(to_chrome_r), str(from_chrome_w), *cmd],
                                    stdout=subprocess.DEVNULL, stderr=err, pass_fds=(to_chrome_r, from_chrome_w),
                                    start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        return cls(proc, to_chrome_w, from_chrome_r, errors, time.monotonic() + timeout_s, timeout_s)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command; its answer's ``result`` (events and other answers are skipped)."""
        msg_id = next(self.ids)
        msg: dict[str, object] = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            answer = json.loads(self._next_message(method))
            if answer.get("id") == msg_id:
                if "error" in answer:
                    raise RuntimeError(f"chromium {method}: {answer['error']}")
                return answer["result"]

    def _next_message(self, method: str) -> bytes:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_chrome], [], [], left)[0]:
                raise TimeoutError(f"chromium: no answer to {method} within {self.timeout_s:g}s")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited while answering {method}: "
                                   f"{self.errors.read_text(errors='replace')[-2000:]}")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return raw

    def close(self) -> None:
        # A throwaway browser: nothing to save. The whole group, and only once every helper
        # is gone may the profile be deleted (one still writing into it made rmtree fail).
        _kill_group(self.proc.pid)
        self.proc.wait(timeout=30)
        os.close(self.to_chrome)
        os.close(self.from_chrome)


def _evaluate_in(pipe: _DevToolsPipe, url: str, expression: str) -> object:
    # Open a blank page, attach, and only then navigate: the expression must run in the
    # report's document, never in the initial about:blank one the navigation replaces.
    target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    pipe.call("Page.navigate", {"url": url}, session)
    document = url.split("#", 1)[0]
    while True:
        try:
            here = pipe.call("Runtime.evaluate", {"expression": "location.href", "returnByValue": True},
                             session)["result"].get("value") or ""
            if here.split("#", 1)[0] == document:
                result = pipe.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                        "returnByValue": True}, session)
                break
        except RuntimeError as e:
            if not _navigating(e):
                raise
        if time.monotonic() > pipe.deadline:
            raise TimeoutError(f"chromium: {url} was not open within {pipe.timeout_s:g}s")
        time.sleep(0.2)  # the navigation has not committed yet
    if "exceptionDetails" in result:
        raise RuntimeError(f"script failed: {result['exceptionDetails']}")
    return result["result"].get("value")


def _navigating(error: RuntimeError) -> bool:
    """Whether an evaluation failed only because the page was between two documents."""
    return any(m in str(error) for m in ("context was destroyed", "navigated or closed", "Cannot find context"))


def _kill_group(pgid: int, timeout_s: float = 15.0) -> None:
    """SIGKILL a process group and wait until none of its processes is left."""
    import os
    import signal
    import time
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except PermissionError:  # only zombies left, waiting for their parent to reap them
            pass
        time.sleep(0.05)
        try:
            os.waitpid(pgid, os.WNOHANG)  # the leader is our child: reap it so the group can empty
        except ChildProcessError:
            pass


def _high_fd(fd: int) -> int:
    """The same open file on a descriptor numbered 5 or more (the low one is closed)."""
    import fcntl
    import os
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return high
