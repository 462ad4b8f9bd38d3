"""JupyterHub for one workshop room on one machine, one system account per learner.

Start it as root with ``sudo make hub-run`` (workshop/README.md is the how-to). Passwords come from
a root-only secrets file, never from the environment; the other settings from environment variables,
so the same file serves the room, tests/test_hub.py and benchmarks/hub_load.py:

==========================  ==================================================================
WORKSHOP_LEARNERS           required: the comma-separated allow-list of learner names (lower-case
                            letters, digits, '_' or '-'). Only these may log in or get an account.
WORKSHOP_SECRETS_FILE       the secrets file (default <data dir>/secrets.toml, mode 0600, owned by
                            root): ``admin_password`` (the instructor's) and, with the shared-password
                            opt-in, ``room_password``. `hubctl.py secrets` writes one.
WORKSHOP_AUTH               "first-use" (default): each learner's first login sets their own
                            password (at least 12 characters). "shared-password": one room password
                            for every listed name — anyone holding it can log in as ANY listed
                            learner; a trusted room only.
WORKSHOP_ADMINS             the instructor's names (default "instructor"): they log in with
                            admin_password, never by first use
WORKSHOP_DATA_DIR           hub state (cookie secret, database, passwords, proxy pid), made 0700
                            (default workshop/data)
WORKSHOP_HOMES_DIR          where learners' homes are made, jupyter-<name>, 0700 (default /home)
WORKSHOP_IP / _PORT         public address (default 127.0.0.1 : 8000)
WORKSHOP_HUB_PORT           the hub's internal port (default 8081, on 127.0.0.1)
WORKSHOP_PROXY_API_PORT     the proxy's REST port (default 8001, on 127.0.0.1)
WORKSHOP_COURSE_REPO        git URL nbgitpuller clones (default file:// of this checkout)
WORKSHOP_COURSE_BRANCH      branch to clone (default: the branch this checkout is on)
WORKSHOP_IDLE_TIMEOUT_S     the idle culler stops a server idle this long (default 3600 s)
WORKSHOP_CULL_EVERY_S       how often the culler looks (default 300 s)
WORKSHOP_MEM_LIMIT          per learner, enforced by a memory cgroup (default 2G; K/M/G/T binary)
WORKSHOP_PIDS_LIMIT         per learner, processes and threads, enforced by a pids cgroup (default 512)
WORKSHOP_CPU_LIMIT          optional, cores per learner, enforced by the cpu cgroup's quota
WORKSHOP_LOGIN_MAX_FAILURES failed logins for one name from one address before that pair is locked
WORKSHOP_LOGIN_WINDOW_S     out (default 5, within 300 s) for WORKSHOP_LOGIN_LOCKOUT_S (default 60 s);
                            an address is locked at 6 times as many, a name slowed at 4 times
WORKSHOP_SSL_CERT / _KEY    both or neither: JupyterHub serves HTTPS itself with these files
WORKSHOP_SUBDOMAIN_HOST     e.g. https://hub.example.org: each learner's server on its own subdomain
                            (<name>.hub.example.org; a wildcard DNS record and certificate). Without
                            it all servers share the hub's web origin (workshop/README.md says what
                            that allows)
WORKSHOP_BEHIND_TLS_PROXY   "1": WORKSHOP_IP is not loopback but a TLS proxy on another host is in
                            front; without it (or a cert+key) a non-loopback address is refused
WORKSHOP_SPAWN_TIMEOUT_S    how long a server may take to start (default 120 s)
==========================  ==================================================================

What it promises (workshop/workshop_hub.py; each tested as an attack from a learner's kernel in
tests/test_hub.py): a learner cannot read or write another's home, notebooks, connection files or
server token; cannot signal, renice or re-score another learner's processes or the hub's; cannot
read the hub's cookie secret, database, passwords or proxy token, nor write the course environment
or the course's git source; cannot log in as another learner with their own password; an
out-of-memory cell kills only that learner's kernel and a fork loop stops at their process limit.
Kernels talk over IPC sockets in the learner's 0700 home, not TCP ports others could subscribe to.
"""

import ipaddress
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hubctl  # noqa: E402  (workshop/hubctl.py: paths, the course link, the proxy binary)
import workshop_hub  # noqa: E402  (workshop/workshop_hub.py: accounts, passwords, limits)

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


def _refuse(message: str) -> None:
    sys.exit(f"workshop hub: refusing to start: {message}")


# The hub runs as root: the local spawner needs it to start each learner's server as that learner's
# own account (setuid), to make the accounts, and to put each server in its own cgroup.
if os.getuid() != 0:
    _refuse("run it as root (`sudo make hub-run`): each learner's server runs as their own system account, "
            "which only root can start.")

proxy = hubctl.proxy_command()
if proxy is None:
    sys.exit("workshop hub: configurable-http-proxy not found; run `make hub` (installs it into "
             "workshop/node_modules from npm).")

data_dir = Path(os.environ.get("WORKSHOP_DATA_DIR") or hubctl.WORKSHOP / "data").resolve()
data_dir.mkdir(parents=True, exist_ok=True)
os.chown(data_dir, 0, 0)
os.chmod(data_dir, 0o700)  # cookie secret, database, passwords, proxy pid: root's alone
homes_dir = Path(os.environ.get("WORKSHOP_HOMES_DIR") or "/home").resolve()
try:
    secrets = workshop_hub.load_secrets(os.environ.get("WORKSHOP_SECRETS_FILE") or data_dir / "secrets.toml")
    learners = workshop_hub.check_learner_names(
        [n.strip() for n in os.environ.get("WORKSHOP_LEARNERS", "").split(",") if n.strip()])
    admins = workshop_hub.check_learner_names(
        [n.strip() for n in os.environ.get("WORKSHOP_ADMINS", "instructor").split(",") if n.strip()])
    mem_bytes = workshop_hub.parse_size_bytes(os.environ.get("WORKSHOP_MEM_LIMIT") or "2G")
    workshop_hub._throttle_from_env()  # the login throttle's settings, checked now rather than at the first login
except workshop_hub.WorkshopConfigError as err:
    _refuse(str(err))
if not learners:
    _refuse("set WORKSHOP_LEARNERS to the comma-separated names of the room's learners (only these may log in "
            "and get an account).")
if set(learners) & set(admins):
    _refuse(f"{sorted(set(learners) & set(admins))} are both learners and instructors; use different names.")
auth_mode = os.environ.get("WORKSHOP_AUTH", "first-use")
if auth_mode not in ("first-use", "shared-password"):
    _refuse(f"WORKSHOP_AUTH={auth_mode!r}; use 'first-use' (each learner sets their own password) or "
            "'shared-password' (a trusted room: anyone with the room password can log in as any listed learner).")
if auth_mode == "shared-password" and "room_password" not in secrets:
    _refuse("WORKSHOP_AUTH=shared-password needs room_password in the secrets file.")
if auth_mode == "first-use" and "room_password" in secrets:
    _refuse("the secrets file has a room_password but WORKSHOP_AUTH is first-use; remove it, or opt in to the "
            "shared password with WORKSHOP_AUTH=shared-password.")
problem = workshop_hub.Cgroups().problem()
if problem:
    _refuse(f"learners' memory and process limits cannot be enforced here: {problem}.")
pids_limit = _env_int("WORKSHOP_PIDS_LIMIT", 512)
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

# The course environment (this Python and its packages) and a local course source must be readable by
# the learners' accounts and writable by none of them: a learner who could write either would run code
# in every other learner's server.
shared = [Path(sys.prefix), Path(sys.executable).resolve(), Path(os.__file__).resolve().parent]  # venv, interpreter, stdlib
shared += [Path(course_repo[len("file://"):])] if course_repo.startswith("file://") else []
for path in shared:
    why = workshop_hub.readable_by_learners(path) or workshop_hub.writable_by_learners(path)
    if why:
        _refuse(f"{path} must be root-owned, readable and not writable by learners' accounts: {why}. The hub "
                "and learners' servers run from workshop/.venv (`make hub` builds it from /usr/bin/python3).")

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
# Each learner's server on its own subdomain (<name>.<host>): without it every learner's server
# shares the hub's web origin, and a learner who makes her server answer with a page of her own can
# act as whoever opens it (create a token in their name). Needs a wildcard DNS record and certificate.
subdomain_host = os.environ.get("WORKSHOP_SUBDOMAIN_HOST", "")
if subdomain_host:
    if not re.fullmatch(r"https?://[a-z0-9.-]+(:[0-9]+)?", subdomain_host):
        _refuse(f"WORKSHOP_SUBDOMAIN_HOST={subdomain_host!r}; use a URL such as https://hub.example.org")
    c.JupyterHub.subdomain_host = subdomain_host

# --- who gets in: each learner by their own password (first use), the instructor by the admin one ----
if auth_mode == "first-use":
    c.JupyterHub.authenticator_class = workshop_hub.WorkshopAuthenticator
    c.FirstUseAuthenticator.dbm_path = str(data_dir / "passwords.dbm")
    c.FirstUseAuthenticator.min_password_length = workshop_hub.MIN_PASSWORD_CHARS
    c.FirstUseAuthenticator.create_users = True  # a listed name's first login makes its hub user
    c.WorkshopAuthenticator.workshop_admin_password = secrets.get("admin_password", "")
else:
    c.JupyterHub.authenticator_class = workshop_hub.WorkshopSharedPasswordAuthenticator
    c.WorkshopSharedPasswordAuthenticator.workshop_admin_password = secrets.get("admin_password", "")
    c.WorkshopSharedPasswordAuthenticator.workshop_room_password = secrets["room_password"]
c.Authenticator.allowed_users = set(learners)
c.Authenticator.admin_users = set(admins) if "admin_password" in secrets else set()
c.Authenticator.username_pattern = workshop_hub.USERNAME_PATTERN

# --- each learner: their own system account, home, cgroup; kernels over IPC ------------------------
c.JupyterHub.spawner_class = workshop_hub.WorkshopSpawner
c.WorkshopSpawner.homes_dir = str(homes_dir)
c.WorkshopSpawner.pids_limit = pids_limit
c.Spawner.disable_user_config = True  # no ~/.jupyter config or extensions of the learner's own
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.ip = "127.0.0.1"
c.Spawner.start_timeout = spawn_timeout_s
c.Spawner.http_timeout = spawn_timeout_s
c.Spawner.args = [
    # idle kernels: shut down after 20 minutes (checked every 2), before the culler stops the server
    "--MappingKernelManager.cull_idle_timeout=1200", "--MappingKernelManager.cull_interval=120",
    # kernels over IPC sockets beside their connection file in the 0700 home, not TCP ports on
    # loopback that another account could connect or subscribe to
    "--KernelManager.transport=ipc",
]
# What a learner's server inherits from the hub's environment: only these (no proxy token).
c.Spawner.env_keep = ["LANG", "LC_ALL", "VIRTUAL_ENV", "JUPYTERHUB_SINGLEUSER_APP"]
c.Spawner.environment = {
    # the learner's server, kernels and git come from this environment
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
    "NBGITPULLER_APP": "lab",
    # git refuses to read a repository another account owns ("dubious ownership") unless a protected
    # config names it: a root-owned, world-readable system config naming the course source only
    "GIT_CONFIG_SYSTEM": str(workshop_hub.write_git_config(Path(sys.prefix) / "etc" / "workshop-gitconfig",
                                                           course_repo)),
}
c.Spawner.mem_limit = mem_bytes  # enforced: the learner's memory cgroup (workshop_hub.Cgroups)
if cpu_limit is not None:
    c.Spawner.cpu_limit = cpu_limit  # enforced: the cpu cgroup's quota

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
