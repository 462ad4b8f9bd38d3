"""JupyterHub for one workshop room on one machine.

Start it with ``make hub-run`` (or ``WORKSHOP_PASSWORD=... .venv/bin/jupyterhub -f
workshop/jupyterhub_config.py``); workshop/README.md is the how-to. Settings come from environment
variables so the same file serves the room, tests/test_hub.py and benchmarks/hub_load.py:

==========================  ==================================================================
WORKSHOP_PASSWORD           required, at least 8 characters: the one password every learner
                            types (any username). The hub refuses to start without it.
WORKSHOP_DATA_DIR           hub state and one folder per learner (default workshop/data)
WORKSHOP_IP / _PORT         public address (default 127.0.0.1 : 8000)
WORKSHOP_HUB_PORT           the hub's internal port (default 8081, on 127.0.0.1)
WORKSHOP_PROXY_API_PORT     the proxy's REST port (default 8001, on 127.0.0.1)
WORKSHOP_COURSE_REPO        git URL nbgitpuller clones (default file:// of this checkout)
WORKSHOP_COURSE_BRANCH      branch to clone (default: the branch this checkout is on)
WORKSHOP_IDLE_TIMEOUT_S     the idle culler stops a server idle this long (default 3600 s)
WORKSHOP_CULL_EVERY_S       how often the culler looks (default 300 s)
WORKSHOP_MEM_LIMIT          e.g. "2G" (a number with K/M/G/T): advertised, NOT enforced (below)
WORKSHOP_CPU_LIMIT          e.g. "1" (a positive number of cores): advertised, NOT enforced
WORKSHOP_SSL_CERT / _KEY    both or neither: JupyterHub serves HTTPS itself with these files
WORKSHOP_BEHIND_TLS_PROXY   "1": WORKSHOP_IP is not loopback but a TLS proxy on another host is in
                            front; without it (or a cert+key) a non-loopback address is refused
WORKSHOP_ALLOW_ROOT         "1": let the hub run as root. Refused otherwise: with this spawner every
                            learner's code would run as root. Only hubctl.Hub sets it (CI containers)
WORKSHOP_ADMIN_PASSWORD     optional, at least 32 characters: the instructor's password (admin
                            panel); only names in WORKSHOP_ADMINS (default "instructor") use it
WORKSHOP_LEARNERS           optional comma-separated allow-list of usernames (default: anyone
                            with the password may pick a name)
WORKSHOP_SPAWN_TIMEOUT_S    how long a server may take to start (default 120 s)
==========================  ==================================================================

Each learner's server is its own process (``SimpleLocalProcessSpawner``: no system accounts), with
its own folder ``<data dir>/learners/<name>``. That spawner gives NO isolation: every learner's code
runs as the account that runs the hub, so every learner has a shell as that account and can read
the other learners' folders AND the hub's own secrets (the workshop and admin passwords from
/proc/<hub pid>/environ, the proxy token, the cookie secret file). Run it only for a trusted room,
under a dedicated unprivileged account (``useradd -m workshop``; never root, which is refused), and
stop it after the workshop. The spawner does NOT enforce memory or CPU limits either:
``mem_limit``/``cpu_limit`` only reach the server as MEM_LIMIT/CPU_LIMIT for display. For isolation
and enforced limits on one machine use ``systemdspawner`` with ``dynamic_users=True``; for more,
Zero to JupyterHub (workshop/values.yaml: Kubernetes isolates learners and enforces the limits).
"""

import ipaddress
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hubctl  # noqa: E402  (workshop/hubctl.py: paths, the course link, the proxy binary)

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        sys.exit(f"workshop hub: {name}={raw!r} is not a whole number")
    if value <= 0:
        sys.exit(f"workshop hub: {name}={value} must be positive")
    return value


password = os.environ.get("WORKSHOP_PASSWORD", "")
if len(password) < hubctl.MIN_PASSWORD_CHARS:
    sys.exit(f"workshop hub: refusing to start: set WORKSHOP_PASSWORD to the workshop password "
             f"(at least {hubctl.MIN_PASSWORD_CHARS} characters; got {len(password)}).")

# Never as root unless asked: SimpleLocalProcessSpawner runs every learner's code as the hub's own
# account, so a hub run by root hands every learner a root shell. hubctl.Hub (tests, benchmark) sets
# WORKSHOP_ALLOW_ROOT=1 only when it is itself root, because CI containers run everything as root
# (throwaway, loopback-only, no real learners); a room's hub runs under `useradd -m workshop`.
if os.getuid() == 0 and os.environ.get("WORKSHOP_ALLOW_ROOT") != "1":
    sys.exit("workshop hub: refusing to run as root (every learner's code would run as root); run it as an "
             "unprivileged account, e.g. `useradd -m workshop` (WORKSHOP_ALLOW_ROOT=1 overrides, for CI only).")

proxy = hubctl.proxy_command()
if proxy is None:
    sys.exit("workshop hub: configurable-http-proxy not found; run `make hub` (installs it into "
             "workshop/node_modules from npm).")

data_dir = Path(os.environ.get("WORKSHOP_DATA_DIR") or hubctl.WORKSHOP / "data").resolve()
learners_dir = data_dir / "learners"
learners_dir.mkdir(parents=True, exist_ok=True)
ip = os.environ.get("WORKSHOP_IP", "127.0.0.1")
port = _env_int("WORKSHOP_PORT", 8000)
hub_port = _env_int("WORKSHOP_HUB_PORT", 8081)
proxy_api_port = _env_int("WORKSHOP_PROXY_API_PORT", 8001)
idle_timeout_s = _env_int("WORKSHOP_IDLE_TIMEOUT_S", 3600)
cull_every_s = _env_int("WORKSHOP_CULL_EVERY_S", 300)
spawn_timeout_s = _env_int("WORKSHOP_SPAWN_TIMEOUT_S", 120)
ssl_cert = os.environ.get("WORKSHOP_SSL_CERT", "")
ssl_key = os.environ.get("WORKSHOP_SSL_KEY", "")
if bool(ssl_cert) != bool(ssl_key):
    sys.exit("workshop hub: set both WORKSHOP_SSL_CERT and WORKSHOP_SSL_KEY, or neither "
             f"(got {'only WORKSHOP_SSL_CERT' if ssl_cert else 'only WORKSHOP_SSL_KEY'}).")


def _is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # "" (all interfaces) or a host name: not loopback
        return False


if not _is_loopback(ip) and not ssl_cert and os.environ.get("WORKSHOP_BEHIND_TLS_PROXY") != "1":
    sys.exit(f"workshop hub: refusing plain HTTP on WORKSHOP_IP={ip!r} (the password would cross the network in "
             "clear text); set WORKSHOP_SSL_CERT and WORKSHOP_SSL_KEY, keep 127.0.0.1 behind a local reverse "
             "proxy, or set WORKSHOP_BEHIND_TLS_PROXY=1 if a TLS proxy on another host is in front.")

mem_limit = os.environ.get("WORKSHOP_MEM_LIMIT", "")
if mem_limit and not re.fullmatch(r"[0-9]+(\.[0-9]+)?[KMGT]?", mem_limit):
    sys.exit(f"workshop hub: WORKSHOP_MEM_LIMIT={mem_limit!r} is not a size; use a number with an optional "
             "K, M, G or T suffix, e.g. 2G.")
cpu_limit_raw = os.environ.get("WORKSHOP_CPU_LIMIT", "")
cpu_limit = None
if cpu_limit_raw:
    try:
        cpu_limit = float(cpu_limit_raw)
    except ValueError:
        cpu_limit = float("nan")
    if not cpu_limit > 0 or cpu_limit == float("inf"):
        sys.exit(f"workshop hub: WORKSHOP_CPU_LIMIT={cpu_limit_raw!r} is not a positive number of cores, e.g. 1 or 0.5.")
try:
    course_repo = os.environ.get("WORKSHOP_COURSE_REPO") or hubctl.ROOT.as_uri()
    course_branch = os.environ.get("WORKSHOP_COURSE_BRANCH") or hubctl.course_branch(hubctl.ROOT)
except ValueError as err:
    sys.exit(f"workshop hub: {err}")

# --- network: everything internal on loopback; the public side only where WORKSHOP_IP says ---------
c.JupyterHub.ip = ip
c.JupyterHub.port = port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = hub_port
c.JupyterHub.proxy_class = "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = proxy
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = str(data_dir / "proxy.pid")
c.JupyterHub.pid_file = str(data_dir / "jupyterhub.pid")
c.JupyterHub.db_url = f"sqlite:///{data_dir / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(data_dir / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every learner's server
# TLS on a real host: terminate it in a reverse proxy (docs/instructor-guide.md), or set
# WORKSHOP_SSL_CERT / WORKSHOP_SSL_KEY to have JupyterHub serve HTTPS itself (checked above).
if ssl_cert:
    c.JupyterHub.ssl_cert = ssl_cert
    c.JupyterHub.ssl_key = ssl_key

# --- who gets in: the shared workshop password (JupyterHub >= 5.3) ---------------------------------
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = password
allowed = [name.strip() for name in os.environ.get("WORKSHOP_LEARNERS", "").split(",") if name.strip()]
if allowed:
    c.Authenticator.allowed_users = set(allowed)
else:
    c.Authenticator.allow_all = True  # anyone holding the password picks a username
c.Authenticator.username_pattern = r"^[a-z0-9][a-z0-9_.-]{0,31}$"
# Optional instructor login (admin panel: who is on, stop a stuck server): names in WORKSHOP_ADMINS
# (default "instructor") log in with WORKSHOP_ADMIN_PASSWORD (at least 32 characters), never with the
# learners' password.
admin_password = os.environ.get("WORKSHOP_ADMIN_PASSWORD", "")
if admin_password:
    if len(admin_password) < hubctl.MIN_ADMIN_PASSWORD_CHARS or admin_password == password:
        sys.exit(f"workshop hub: WORKSHOP_ADMIN_PASSWORD must be at least {hubctl.MIN_ADMIN_PASSWORD_CHARS} "
                 "characters and differ from WORKSHOP_PASSWORD")
    c.SharedPasswordAuthenticator.admin_password = admin_password
    c.Authenticator.admin_users = {name.strip() for name in
                                   os.environ.get("WORKSHOP_ADMINS", "instructor").split(",") if name.strip()}
# Read once; keep the passwords out of what the hub's children (proxy, culler) inherit.
for _secret in ("WORKSHOP_PASSWORD", "WORKSHOP_ADMIN_PASSWORD"):
    os.environ.pop(_secret, None)

# --- each learner: one process, one folder, no system account ---------------------------------------
c.JupyterHub.spawner_class = "simple"  # jupyterhub.spawner.SimpleLocalProcessSpawner
c.SimpleLocalProcessSpawner.home_dir_template = str(learners_dir / "{username}")
c.Spawner.notebook_dir = str(learners_dir / "{username}")
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.ip = "127.0.0.1"
c.Spawner.start_timeout = spawn_timeout_s
c.Spawner.http_timeout = spawn_timeout_s
# Idle kernels: each learner's server shuts down a kernel idle for 20 minutes (checked every 2), so a
# forgotten notebook does not hold its memory until the idle culler stops the whole server.
c.Spawner.args = ["--MappingKernelManager.cull_idle_timeout=1200", "--MappingKernelManager.cull_interval=120"]
if os.getuid() == 0:  # only reached with WORKSHOP_ALLOW_ROOT=1 (CI containers), where Jupyter insists on it
    c.Spawner.args.append("--ServerApp.allow_root=True")
# What a learner's server inherits from the hub's environment: only these (no WORKSHOP_* password,
# no CONFIGPROXY_AUTH_TOKEN). This stops secrets leaking through the environment, but NOT a learner
# reading /proc/<hub pid>/environ or the cookie secret file: they run as the same account (docstring).
c.Spawner.env_keep = ["LANG", "LC_ALL", "VIRTUAL_ENV", "JUPYTERHUB_SINGLEUSER_APP"]
c.Spawner.environment = {
    # the learner's server, kernels and git come from this environment
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]),
    "NBGITPULLER_APP": "lab",
}
# Advertised, not enforced: LocalProcessSpawner passes these on as MEM_LIMIT / CPU_LIMIT (which
# jupyter-resource-usage displays) but cannot stop a learner using more. See the docstring above.
if mem_limit:
    c.Spawner.mem_limit = mem_limit
if cpu_limit is not None:
    c.Spawner.cpu_limit = cpu_limit

# --- the course: nbgitpuller clones it on first login, merges updates later (edits survive) ----------
c.JupyterHub.default_url = hubctl.pull_link(course_repo, course_branch)

# --- the idle culler: stops servers idle for WORKSHOP_IDLE_TIMEOUT_S --------------------------------
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                f"--timeout={idle_timeout_s}", f"--cull-every={cull_every_s}"],
}]
