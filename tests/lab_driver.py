"""Support for the browser tests: a JupyterLab server on a scratch copy of the course, and checks
made through Chromium with Playwright. Used by tests/test_browser.py; no test lives here."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

# Text the widget front-end shows when a widget cannot be displayed (model missing, version or
# module mismatch, view failure). Any of it on the page fails the check.
#: how long a wait for the page or the kernel may last before a test gives up (seconds). Every wait
#: returns as soon as its condition holds, so a long deadline costs nothing when things are quick; it
#: is there for a machine busy with other work, and it is not a speed target
#: (benchmarks/browser_latency.py measures how fast the dashboards answer).
DEADLINE_S = 300

WIDGET_ERROR_TEXTS = (
    "Error displaying widget",
    "Failed to load model class",
    "Failed to create view",
    "Could not create a view",
    "Error rendering output",
    "Click to show javascript error",
)

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


def find_chromium() -> str | None:
    """The system Chromium (never a downloaded one): $ROOFLINE_CHROMIUM, else chromium on PATH."""
    explicit = os.environ.get("ROOFLINE_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """True when a new server could listen on ``port`` (as servers do, with SO_REUSEADDR, so
    connections of the old one lingering in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def browser_missing() -> list[str]:
    """What the browser tests need and this machine lacks (empty: nothing)."""
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright (install the test extras: pip install -e '.[test]')")
    if not find_chromium():
        missing.append("a system Chromium (Debian: apt-get install chromium; or set ROOFLINE_CHROMIUM)")
    return missing


def dashboard_notebooks(root: Path) -> list[Path]:
    """Lesson notebooks that show a dashboard: they call a ``*_dashboard(`` from the package."""
    found = []
    for script in sorted((root / "py" / "notebooks").glob("[0-9]*.py")):
        text = script.read_text(encoding="utf-8")
        if "roofline_lessons.viz.dashboards" in text and "_dashboard(" in text:
            found.append(root / "notebooks" / script.with_suffix(".ipynb").name)
    return found


def _lab_settings(settings_dir: Path) -> None:
    """Quiet, non-writing JupyterLab: no news toast, no autosave; every cell of a notebook in the
    page (no windowing), so :func:`wait_ran_all` can read every cell's prompt."""
    files = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for rel, value in files.items():
        path = settings_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


@contextmanager
def jupyterlab_server(content_root: Path, scratch: Path, server: dict | None = None):
    """Start JupyterLab on a free loopback port with a random token; always stop it and free the port.

    Yields ``(base_url, token)``. The server's config, runtime, settings and workspace folders are
    all inside ``scratch``, so the learner's own JupyterLab state is never touched.
    """
    server = {} if server is None else server
    port, token = free_port(), secrets.token_hex(24)
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                     ("IPYTHONDIR", "ipython")):
        env[var] = str(scratch / sub)
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["ROOFLINE_LESSONS_DATA"] = str(scratch / "learner-data")  # drill progress, measurements
    _lab_settings(scratch / "settings")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={content_root}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(scratch / "jupyterlab.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited early; see {scratch / 'jupyterlab.log'}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not answer within {DEADLINE_S} s")
            time.sleep(0.5)
        yield base, token
    finally:
        _stop(proc)
        log.close()
        server.update(returncode=proc.returncode, port=port)
        deadline = time.monotonic() + 20
        while not port_is_free(port) and time.monotonic() < deadline:
            time.sleep(0.2)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def widget_problems(page) -> list[str]:
    """Widget error texts and error outputs visible on the page."""
    problems = []
    body = page.locator("body").inner_text()
    for text in WIDGET_ERROR_TEXTS:
        if text in body:
            problems.append(f"the page shows {text!r}")
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    for i in range(errors.count()):
        problems.append("error output: " + errors.nth(i).inner_text()[:400])
    return problems


def wait_idle(page, timeout_s: float = DEADLINE_S) -> None:
    """Wait until the kernel reports Idle in the status bar."""
    page.locator("#jp-main-statusbar").get_by_text("Idle").first.wait_for(timeout=timeout_s * 1000)


def wait_ran_all(page, timeout_s: float = DEADLINE_S, quiet_s: float = 0.5) -> None:
    """Wait until Run All has finished: no code cell whose prompt shows is queued (``[*]``) or not yet
    run (``[ ]``), and the kernel has reported Idle at every look for ``quiet_s`` seconds (between two
    cells the status shows Idle only for an instant; a cell with a hidden input shows no prompt, so
    the cells after it, or the quiet status, say whether it ran). Raises TimeoutError with the prompts
    seen if that does not happen within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    prompts: list[str] = []
    quiet_since = None
    while time.monotonic() < deadline:
        prompts = page.locator(".jp-NotebookPanel .jp-CodeCell .jp-InputPrompt").all_inner_texts()
        shown = [s.strip() for s in prompts if s.strip()]
        ran = bool(shown) and all("*" not in s and any(ch.isdigit() for ch in s) for s in shown)
        idle = ran and page.locator("#jp-main-statusbar").get_by_text("Idle").count() > 0
        now = time.monotonic()
        if not idle:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= quiet_s:
            return
        time.sleep(0.1)
    raise TimeoutError(f"Run All did not finish within {timeout_s} s; prompts: {prompts}")


def run_all(page) -> None:
    """Run → Run All Cells, through the menu as a learner would."""
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator("li[data-command='runmenu:run-all']").click()


def cells_started(page, timeout_s: float) -> bool:
    """True once any rendered code cell shows an execution prompt ([*] or [1]), or the kernel reports
    Busy: either means Run All reached the kernel, so it is never clicked a second time.

    JupyterLab renders only the cells near the viewport, so look at all prompts, not the first one.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        texts = page.locator(".jp-NotebookPanel .jp-InputPrompt").all_inner_texts()
        if any("*" in s or any(ch.isdigit() for ch in s) for s in texts):
            return True
        if page.locator("#jp-main-statusbar").get_by_text("Busy").count():
            return True
        time.sleep(0.25)
    return False


def dashboard_image_src(page) -> str | None:
    """The ``src`` of the dashboard's chart: the last image in the output area of a widget box."""
    imgs = page.locator(".jp-OutputArea-output .widget-vbox img")
    if imgs.count() == 0:
        return None
    return imgs.last.get_attribute("src")


def wait_for_new_image(page, old: str | None, timeout_s: float = DEADLINE_S) -> str | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        src = dashboard_image_src(page)
        if src and src != old:
            return src
        time.sleep(0.25)
    return dashboard_image_src(page)


def shutdown_kernels(base: str, token: str) -> None:
    """Stop every kernel the server runs (pages closed in the browser leave theirs running)."""
    try:
        with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=10) as r:
            kernels = json.loads(r.read())
        for k in kernels:
            req = urllib.request.Request(f"{base}/api/kernels/{k['id']}?token={token}", method="DELETE")
            urllib.request.urlopen(req, timeout=10).close()
    except OSError:
        pass


def open_and_run_all(page, base: str, token: str, rel_path: str) -> bool:
    """Open a notebook in a fresh workspace and Run All Cells; False if the cells never started."""
    # ?reset: a fresh workspace, so tabs left open by an earlier page do not take the focus
    page.goto(f"{base}/lab/tree/{rel_path}?reset&token={token}")
    return run_all_once_open(page)


def run_all_once_open(page) -> bool:
    """Wait for the notebook just opened and its kernel, then Run All Cells; False if the cells never
    started."""
    page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(timeout=DEADLINE_S * 1000)
    wait_idle(page)
    run_all(page)
    if cells_started(page, timeout_s=60):
        return True
    run_all(page)  # the first click can land before the kernel is attached
    return cells_started(page, timeout_s=DEADLINE_S)


class LabPage:
    """One JupyterLab page kept open for a whole test file: each notebook is opened in it (File → Open
    from Path…) and closed again with its kernel shut down (File → Close and Shut Down), so the app
    loads once instead of once per notebook. After a failure the page is reloaded from scratch, so one
    test's leftovers never reach the next."""

    def __init__(self, browser, base: str, token: str) -> None:
        self.browser, self.base, self.token = browser, base, token
        self.page = None
        self.reload()

    def reload(self) -> None:
        if self.page is not None:
            self.page.close()
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.goto(f"{self.base}/lab?reset&token={self.token}")
        self.page.locator(".jp-LabShell").first.wait_for(timeout=DEADLINE_S * 1000)
        shutdown_kernels(self.base, self.token)

    def open_and_run_all(self, rel_path: str) -> bool:
        """Open ``rel_path`` in the app and Run All Cells; False if the cells never started."""
        page = self.page
        page.locator(".lm-MenuBar-item", has_text="File").first.click()
        page.locator("li[data-command='filebrowser:open-path']").click()
        page.locator(".jp-Dialog input").fill(rel_path)
        page.locator(".jp-Dialog-button.jp-mod-accept").click()
        return run_all_once_open(page)

    def close_notebook(self) -> bool:
        """Close the open notebook and shut its kernel down; False (and a fresh page) if that failed."""
        page = self.page
        try:
            page.keyboard.press("Escape")  # leave any open menu
            page.locator(".lm-MenuBar-item", has_text="File").first.click()
            page.locator("li[data-command='filemenu:close-and-cleanup']").click(timeout=30_000)
            page.locator(".jp-Dialog-button.jp-mod-accept").click(timeout=30_000)
            page.locator(".jp-NotebookPanel").first.wait_for(state="detached", timeout=DEADLINE_S * 1000)
        except Exception:
            self.reload()
            return False
        finally:
            shutdown_kernels(self.base, self.token)
        return True

    def close(self) -> None:
        if self.page is not None:
            self.page.close()
