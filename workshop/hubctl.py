"""Start, drive and stop the workshop JupyterHub (workshop/jupyterhub_config.py).

Used by the config itself (paths, the nbgitpuller link, the proxy binary), by tests/test_hub.py and
benchmarks/hub_load.py (a hub on free loopback ports, learners driven through the hub's REST API,
the learner's server REST API and the kernel websocket), and by instructors::

    workshop/.venv/bin/python workshop/hubctl.py link   # the nbgitpuller link to hand out (path part)
    workshop/.venv/bin/python workshop/hubctl.py check  # what is missing for `make hub-run`
    sudo workshop/.venv/bin/python workshop/hubctl.py secrets  # the root-only secrets file, a random instructor password

Everything here talks to 127.0.0.1 only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "workshop"
CONFIG = WORKSHOP / "jupyterhub_config.py"
HUB_VENV = WORKSHOP / ".venv"  #: the hub's own environment (`make hub`): the hub and learners' servers run from it
HUB_PYTHON = HUB_VENV / "bin" / "python"
TARGET_DIR = "roofline-lessons"  # the folder nbgitpuller clones the course into, in each learner's home
LESSON1 = "notebooks/01_the_concept.ipynb"
DRIVER_MODULES = ("requests", "websocket", "psutil")  #: what tests and the benchmark drive the hub with


class HubError(RuntimeError):
    """The hub, a learner's server or a kernel did not do what was asked (message says what)."""


# --- what the hub needs ------------------------------------------------------------------------------

def proxy_command() -> list[str] | None:
    """configurable-http-proxy: workshop/node_modules (``make hub``) first, else one on PATH."""
    local = WORKSHOP / "node_modules" / ".bin" / "configurable-http-proxy"
    if local.exists():
        return [str(local)]
    found = shutil.which("configurable-http-proxy")
    return [found] if found else None


def missing() -> list[str]:
    """Each missing piece as 'what (how to get it)'; empty when the hub can run here."""
    gaps = [f"python module {name} (make install-test)" for name in DRIVER_MODULES
            if importlib.util.find_spec(name) is None]
    if not (HUB_VENV / ".installed").exists():
        gaps.append(f"the hub's environment {HUB_VENV.relative_to(ROOT)} (make hub)")
    if proxy_command() is None:
        gaps.append("configurable-http-proxy (make hub: npm install into workshop/node_modules)")
    if shutil.which("git") is None:
        gaps.append("git (nbgitpuller runs it)")
    if os.getuid() != 0:
        gaps.append("root (the hub starts each learner's server as their own system account: sudo)")
    if shutil.which("useradd") is None:
        gaps.append("useradd (the hub makes one system account per learner)")
    import workshop_hub

    problem = workshop_hub.Cgroups().problem()
    if problem:
        gaps.append(f"writable cgroups for learners' limits ({problem})")
    return gaps


def remove_accounts(learners, homes_dir: Path) -> None:
    """Kill every process of the learners' system accounts and delete the accounts and their homes
    (tests and the benchmark clean up after themselves; a room's instructor does this by hand)."""
    import workshop_hub

    for learner in learners:
        workshop_hub.remove_account(learner)  # never an account this workshop did not make
        shutil.rmtree(Path(homes_dir) / workshop_hub.account_name(learner), ignore_errors=True)


def course_branch(root: Path = ROOT) -> str:
    """The branch the checkout at ``root`` is on, read from .git/HEAD (no git command run).

    Raises ValueError when ``root`` is not a git checkout or HEAD is detached (nbgitpuller clones a
    branch; set WORKSHOP_COURSE_BRANCH then).
    """
    git = root / ".git"
    if git.is_file():  # a worktree: ".git" names the real git dir
        git = (root / git.read_text().split("gitdir:", 1)[1].strip()).resolve()
    head = git / "HEAD"
    if not head.exists():
        raise ValueError(f"{root} is not a git checkout (no .git/HEAD); nbgitpuller needs a git repository")
    text = head.read_text().strip()
    if not text.startswith("ref: refs/heads/"):
        raise ValueError(f"{root} has a detached HEAD ({text[:12]}); set WORKSHOP_COURSE_BRANCH to a branch name")
    return text.removeprefix("ref: refs/heads/")


def course_source(scratch: Path, root: Path = ROOT, copy: bool = False) -> tuple[str, str]:
    """(git URL, branch) for nbgitpuller to clone the course from this checkout.

    On a branch: ``file://<root>`` and that branch. On a detached HEAD (CI's pull-request checkouts),
    or always when ``copy`` is true (a test that commits to it), a scratch bare repository under
    ``scratch`` holding HEAD's commit as branch ``course`` (git fetch, read only for ``root``).
    Raises HubError when ``root`` is not a git checkout.
    """
    if not copy:
        try:
            return root.as_uri(), course_branch(root)
        except ValueError as err:
            if "detached" not in str(err):
                raise HubError(str(err)) from None
    elif not (root / ".git").exists():
        raise HubError(f"{root} is not a git checkout (no .git); nbgitpuller needs a git repository")
    repo = Path(scratch) / "course.git"
    for cmd in (["git", "init", "--quiet", "--bare", str(repo)],
                ["git", "-C", str(repo), "fetch", "--quiet", "--depth", "1", root.as_uri(), "HEAD"],
                ["git", "-C", str(repo), "update-ref", "refs/heads/course", "FETCH_HEAD"],
                ["git", "-C", str(repo), "symbolic-ref", "HEAD", "refs/heads/course"]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise HubError(f"could not prepare the course repository: {' '.join(cmd)}: {done.stderr.strip()}")
    return repo.as_uri(), "course"


def pull_query(repo: str, branch: str) -> dict[str, str]:
    """nbgitpuller's parameters: clone ``repo`` at ``branch`` into ~/roofline-lessons, open lesson 1."""
    return {"repo": repo, "branch": branch, "targetpath": TARGET_DIR,
            "urlpath": f"lab/tree/{TARGET_DIR}/{LESSON1}"}


def pull_link(repo: str, branch: str) -> str:
    """The hub-relative nbgitpuller link (prefix it with https://<your-hub>) every learner clicks."""
    return "/hub/user-redirect/git-pull?" + urlencode(pull_query(repo, branch), quote_via=quote)


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


# --- the hub process ---------------------------------------------------------------------------------

@dataclass
class Hub:
    """A workshop hub on free loopback ports, state under ``data_dir`` (its secrets file written
    there, root-only, from ``secrets``), learners' homes under ``homes_dir``; a context manager that
    always stops the hub, its proxy, its services and every learner's server. Runs as root."""

    data_dir: Path
    learners: tuple[str, ...]
    secrets: dict[str, str]
    homes_dir: Path = Path("/home")
    idle_timeout_s: int = 3600
    cull_every_s: int = 300
    spawn_timeout_s: int = 120
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    proc: subprocess.Popen | None = None
    _seen: dict[int, object] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return Path(self.data_dir) / "hub.log"

    def env(self) -> dict[str, str]:
        self.port, hub_port, api_port = free_ports(3)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WORKSHOP_")}
        env.update({**self.extra_env, "WORKSHOP_DATA_DIR": str(self.data_dir),
               "WORKSHOP_LEARNERS": ",".join(self.learners), "WORKSHOP_HOMES_DIR": str(self.homes_dir),
               "WORKSHOP_IP": "127.0.0.1", "WORKSHOP_PORT": str(self.port), "WORKSHOP_HUB_PORT": str(hub_port),
               "WORKSHOP_PROXY_API_PORT": str(api_port), "WORKSHOP_IDLE_TIMEOUT_S": str(self.idle_timeout_s),
               "WORKSHOP_CULL_EVERY_S": str(self.cull_every_s),
               "WORKSHOP_SPAWN_TIMEOUT_S": str(self.spawn_timeout_s)})
        env["PATH"] = os.pathsep.join([str(HUB_PYTHON.parent), env.get("PATH", "/usr/bin:/bin")])
        env.pop("VIRTUAL_ENV", None)
        return env

    def start(self, timeout_s: float = 180) -> "Hub":
        import requests

        import workshop_hub

        gaps = missing()
        if gaps:
            raise HubError("cannot start the workshop hub; missing: " + "; ".join(gaps))
        Path(self.data_dir).mkdir(parents=True, exist_ok=True)  # the config makes it 0700 (tested)
        workshop_hub.write_secrets(Path(self.data_dir) / "secrets.toml", self.secrets)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([str(HUB_PYTHON), "-m", "jupyterhub", "-f", str(CONFIG)], cwd=self.data_dir,
                                     env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise HubError(f"the hub exited with status {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.25)
        raise HubError(f"the hub did not answer on {self.url} within {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no hub log)"

    def descendants(self) -> list:
        import psutil

        if self.proc is None:
            return []
        try:
            found = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            found = []
        for p in found:
            self._seen.setdefault(p.pid, p)
        return found

    def learner_processes(self) -> dict[str, list]:
        """Each running learner's server and everything under it (kernels), by username."""
        import psutil

        trees = {}
        for p in self.descendants():
            try:
                if "jupyterhub.singleuser" not in " ".join(p.cmdline()):
                    continue
                name = p.environ().get("JUPYTERHUB_USER")
                if name:
                    trees[name] = [p, *p.children(recursive=True)]
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return trees

    def stop(self, timeout_s: float = 20) -> None:
        """SIGTERM the hub (it stops the servers, services and proxy it started); then SIGKILL
        whatever it started that is still alive."""
        import psutil

        if self.proc is None:
            return
        self.descendants()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        for p in self._seen.values():
            try:
                if p.is_running():
                    p.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(list(self._seen.values()), timeout=5)
        self.proc = None

    def __enter__(self) -> "Hub":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def tree_cpu_seconds(processes: list) -> float:
    """CPU time (user + system, s) ``processes`` have used so far, summed."""
    import psutil

    total = 0.0
    for p in processes:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def tree_memory_bytes(processes: list) -> tuple[int, int]:
    """(RSS, USS) in bytes summed over ``processes``; RSS counts shared library pages once per process
    (an upper bound), USS only the pages each process alone holds (what one more learner adds)."""
    import psutil

    rss = uss = 0
    for p in processes:
        try:
            info = p.memory_full_info()
            rss, uss = rss + info.rss, uss + info.uss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return rss, uss


# --- a learner, as a browser would be, but through the REST APIs ------------------------------------

class Learner:
    """One learner: logs in with their password, gets an API token, starts a server, pulls the
    course, runs code in a kernel over its websocket."""

    def __init__(self, hub_url: str, name: str, timeout_s: float = 60) -> None:
        import requests

        self.hub_url, self.name, self.timeout_s = hub_url, name, timeout_s
        self.session = requests.Session()
        self.token = ""
        self.landing = ""
        self.login_page = ""  #: the login form's answer: its error message when the hub said no

    @property
    def server_url(self) -> str:
        return f"{self.hub_url}/user/{self.name}"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    def login(self, password: str) -> bool:
        """The login form, as a browser posts it; True when the hub let us in (then an API token is
        requested for the REST calls that follow)."""
        page = self.session.get(f"{self.hub_url}/hub/login", timeout=self.timeout_s)
        match = re.search(r'name="_xsrf"\s+value="([^"]+)"', page.text)
        form = {"username": self.name, "password": password, **({"_xsrf": match.group(1)} if match else {})}
        r = self.session.post(f"{self.hub_url}/hub/login", data=form, allow_redirects=False, timeout=self.timeout_s)
        self.login_page = r.text
        if r.status_code != 302:
            return False
        self.landing = r.headers.get("Location", "")  # where a browser goes next: the hub's default_url
        xsrf = next((c.value for c in self.session.cookies if c.name == "_xsrf"), "")
        r = self.session.post(f"{self.hub_url}/hub/api/users/{self.name}/tokens", headers={"X-XSRFToken": xsrf},
                              json={"note": "workshop driver", "expires_in": 7200}, timeout=self.timeout_s)
        if r.status_code != 201:
            raise HubError(f"{self.name}: logged in but could not get an API token: {r.status_code} {r.text[:200]}")
        self.token = r.json()["token"]
        return True

    def api(self, method: str, path: str, **kw):
        return self.session.request(method, f"{self.hub_url}/hub/api{path}", headers=self._headers(),
                                    timeout=self.timeout_s, **kw)

    def spawn(self, timeout_s: float = 120) -> float:
        """Start this learner's server through the REST API; seconds until the hub reports it ready."""
        t0 = time.perf_counter()
        r = self.api("POST", f"/users/{self.name}/server")
        if r.status_code not in (201, 202, 400):  # 400: already running
            raise HubError(f"{self.name}: spawn refused: {r.status_code} {r.text[:200]}")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            model = self.api("GET", f"/users/{self.name}").json()
            server = (model.get("servers") or {}).get("")
            if server and server.get("ready"):
                return time.perf_counter() - t0
            if not model.get("pending") and not server:
                raise HubError(f"{self.name}: the server failed to start (see the hub log)")
            time.sleep(0.25)
        raise HubError(f"{self.name}: server not ready within {timeout_s:.0f} s")

    def pull(self, repo: str, branch: str, timeout_s: float = 120) -> list[dict]:
        """Run nbgitpuller's pull (the event stream the git-pull page listens to); its events."""
        query = pull_query(repo, branch)
        params = {k: query[k] for k in ("repo", "branch", "targetpath")}
        events = []
        with self.session.get(f"{self.server_url}/git-pull/api", params=params, headers=self._headers(),
                              stream=True, timeout=timeout_s) as r:
            if r.status_code != 200:
                raise HubError(f"{self.name}: git-pull answered {r.status_code}: {r.text[:200]}")
            for line in r.iter_lines(decode_unicode=True):
                if line and line.startswith("data: "):
                    event = json.loads(line[6:])
                    events.append(event)
                    if event.get("phase") == "error":
                        raise HubError(f"{self.name}: nbgitpuller failed: {event.get('message')}")
                    if event.get("phase") == "finished":
                        return events
        raise HubError(f"{self.name}: nbgitpuller's stream ended without 'finished'")

    def contents(self, path: str) -> dict:
        r = self.session.get(f"{self.server_url}/api/contents/{quote(path)}", headers=self._headers(),
                             params={"content": 1}, timeout=self.timeout_s)
        if r.status_code != 200:
            raise HubError(f"{self.name}: cannot read {path}: {r.status_code}")
        return r.json()

    def save_notebook(self, path: str, notebook: dict) -> None:
        r = self.session.put(f"{self.server_url}/api/contents/{quote(path)}", headers=self._headers(),
                             json={"type": "notebook", "format": "json", "content": notebook}, timeout=self.timeout_s)
        if r.status_code not in (200, 201):
            raise HubError(f"{self.name}: cannot save {path}: {r.status_code} {r.text[:200]}")

    def start_kernel(self, notebook_path: str) -> str:
        """A python3 kernel for ``notebook_path`` (a session, as JupyterLab opens one: the kernel's
        working directory is the notebook's folder); its id."""
        r = self.session.post(f"{self.server_url}/api/sessions", headers=self._headers(), timeout=self.timeout_s,
                              json={"path": notebook_path, "name": Path(notebook_path).name, "type": "notebook",
                                    "kernel": {"name": "python3"}})
        if r.status_code != 201:
            raise HubError(f"{self.name}: cannot start a kernel: {r.status_code} {r.text[:200]}")
        return r.json()["kernel"]["id"]

    def execute(self, kernel_id: str, cells: list[str], timeout_s: float = 120, printed: list | None = None) -> float:
        """Run ``cells`` in order over the kernel's websocket; seconds for all of them. Raises HubError
        naming the first cell that failed. What the cells print to stdout is appended to ``printed``."""
        import websocket

        ws_url = self.server_url.replace("http://", "ws://", 1) + f"/api/kernels/{kernel_id}/channels"
        ws = websocket.create_connection(ws_url, header=[f"Authorization: token {self.token}"], timeout=timeout_s)
        session = uuid.uuid4().hex
        t0 = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        try:
            for index, code in enumerate(cells):
                msg_id = uuid.uuid4().hex
                ws.send(json.dumps({
                    "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                               "username": self.name, "version": "5.3", "date": ""},
                    "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                    "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                                "allow_stdin": False, "stop_on_error": True}}))
                error, reply, idle = None, None, False
                while reply is None or not idle:  # the reply (shell) and the last output (iopub) race
                    ws.settimeout(max(0.1, deadline - time.monotonic()))
                    try:
                        msg = json.loads(ws.recv())
                    except websocket.WebSocketTimeoutException:
                        raise HubError(f"{self.name}: cell {index + 1} did not finish within {timeout_s:.0f} s")
                    except websocket.WebSocketConnectionClosedException:
                        raise HubError(f"{self.name}: the kernel's connection closed during cell {index + 1}")
                    kind_ = msg.get("header", {}).get("msg_type") or msg.get("msg_type")
                    state = msg.get("content", {}).get("execution_state") if kind_ == "status" else None
                    if state in ("restarting", "dead"):  # the server says so on iopub, outside any request
                        raise HubError(f"{self.name}: the kernel died during cell {index + 1} ({state})")
                    if msg.get("parent_header", {}).get("msg_id") != msg_id:
                        continue
                    kind = msg["header"]["msg_type"]
                    if kind == "error":
                        error = f"{msg['content']['ename']}: {msg['content']['evalue']}"
                    if kind == "stream" and printed is not None and msg["content"].get("name") == "stdout":
                        printed.append(msg["content"]["text"])
                    if kind == "status" and msg["content"].get("execution_state") == "idle":
                        idle = True  # every output of this request came before it
                    if kind == "execute_reply":
                        reply = msg
                if reply["content"]["status"] != "ok":
                    raise HubError(f"{self.name}: cell {index + 1} failed: {error or reply['content']}")
        finally:
            ws.close()
        return time.perf_counter() - t0

    def run(self, kernel_id: str, code: str, timeout_s: float = 120) -> str:
        """Run one cell and return what it printed (stdout), raising HubError if it failed."""
        printed: list[str] = []
        self.execute(kernel_id, [code], timeout_s=timeout_s, printed=printed)
        return "".join(printed)

    def stop_server(self) -> None:
        self.api("DELETE", f"/users/{self.name}/server")


def notebook_code_cells(notebook: dict) -> list[str]:
    """The code cells of a notebook model (as the contents API returns it), as strings."""
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in notebook["cells"] if c["cell_type"] == "code"]


def _main(argv: list[str]) -> int:
    command = argv[0] if argv else "link"
    if command == "link":
        try:
            repo = os.environ.get("WORKSHOP_COURSE_REPO") or ROOT.as_uri()
            print(pull_link(repo, os.environ.get("WORKSHOP_COURSE_BRANCH") or course_branch(ROOT)))
        except ValueError as err:
            print(f"hubctl: {err}", file=sys.stderr)
            return 2
        return 0
    if command == "check":
        gaps = missing()
        for gap in gaps:
            print(f"missing: {gap}")
        print("ready: the workshop hub can start here" if not gaps else "not ready: run `make hub`")
        return 1 if gaps else 0
    if command == "secrets":
        import secrets as random_secrets

        import workshop_hub

        data_dir = Path(os.environ.get("WORKSHOP_DATA_DIR") or WORKSHOP / "data")
        target = Path(argv[1]) if len(argv) > 1 else Path(os.environ.get("WORKSHOP_SECRETS_FILE")
                                                            or data_dir / "secrets.toml")
        if target.exists():
            print(f"hubctl: {target} exists; not overwritten (delete it first to make a new one)", file=sys.stderr)
            return 2
        admin = random_secrets.token_urlsafe(18)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(target.parent, 0o700)
        workshop_hub.write_secrets(target, {"admin_password": admin})
        print(f"wrote {target} (mode 600). The instructor logs in as 'instructor' with: {admin}")
        return 0
    print(f"hubctl: unknown command {command!r}; use 'link', 'check' or 'secrets [FILE]'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
