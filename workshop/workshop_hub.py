"""What keeps one learner away from another, and from the hub (loaded by workshop/jupyterhub_config.py).

The design follows The Littlest JupyterHub and JupyterHub's security overview, on one machine and
without systemd:

- **A system account per learner.** The hub runs as root (the design JupyterHub's local spawner
  expects); each learner's server runs as ``jupyter-<name>``, an account made on that learner's
  first start, only for a name on the allow-list, with a 0700 home (``umask 077`` for everything
  the server writes). An account of that name that this hub did not make (no :data:`ACCOUNT_MARK`
  in its comment field, or a system uid) is never used.
- **Per-learner passwords** (:class:`WorkshopAuthenticator`): the first login of an allow-listed
  name sets its password (FirstUseAuthenticator, bcrypt-hashed in the hub's 0700 data folder);
  the instructor's names log in with the admin password from the root-only secrets file, never by
  first use. The shared room password is an explicit opt-in (``WORKSHOP_AUTH=shared-password``)
  for a trusted room: with it anyone holding the password may log in as any listed name.
  Failed logins are throttled per name and per address (:class:`LoginThrottle`).
- **Limits that hold** (:class:`Cgroups`): each learner's server, and every kernel under it, runs
  in its own memory and pids cgroup (v2, or v1 where that is what the machine has) with a CPU
  weight, so an out-of-memory cell kills only that learner's kernel and a fork loop stops at the
  learner's own process limit.
- **Secrets in a file, not an environment**: passwords are read from a root-only TOML file
  (:func:`load_secrets`), never from environment variables, which ``/proc/<pid>/environ`` keeps
  for the life of a process.
"""

from __future__ import annotations

import hmac
import os
import pwd
import re
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

MIN_PASSWORD_CHARS = 12  #: every password: the learners' own, the instructor's, a shared room password
MAX_PASSWORD_BYTES = 72  #: bcrypt hashes at most 72 bytes (bcrypt 5 refuses longer ones)
MIN_DISTINCT_CHARS = 4  #: "aaaaaaaaaaaa" and "121212121212" are refused
ACCOUNT_PREFIX = "jupyter-"  #: a learner ``ada`` runs as the system account ``jupyter-ada`` (as in TLJH)
ACCOUNT_MARK = "roofline-lessons workshop learner"  #: the comment field of every account this hub makes
#: a learner's name: lower-case, starting with a letter, short enough that ``jupyter-<name>`` is a
#: valid account name (at most 32 characters)
USERNAME_PATTERN = r"^[a-z][a-z0-9_-]{0,22}$"
SECRET_KEYS = {"admin_password", "room_password"}
CGROUP_NAME = "roofline-workshop"


class WorkshopConfigError(ValueError):
    """A setting or the secrets file is unsafe or malformed (the message names it and what is allowed)."""


# --- passwords and the secrets file ------------------------------------------------------------------

def check_password(value: object, what: str) -> str:
    """``value`` if it is an acceptable password, else :class:`WorkshopConfigError` naming ``what``:
    printable ASCII (no control characters; non-ASCII would be typed differently on different
    keyboards), at least :data:`MIN_PASSWORD_CHARS` characters of which :data:`MIN_DISTINCT_CHARS`
    differ, not only spaces, at most :data:`MAX_PASSWORD_BYTES`."""
    if not isinstance(value, str):
        raise WorkshopConfigError(f"{what} must be text, got {type(value).__name__}")
    if not value.isascii() or not value.isprintable():
        raise WorkshopConfigError(f"{what} must be printable ASCII (letters, digits, punctuation, spaces)")
    if len(value) < MIN_PASSWORD_CHARS:
        raise WorkshopConfigError(f"{what} must be at least {MIN_PASSWORD_CHARS} characters, got {len(value)}")
    if len(value) > MAX_PASSWORD_BYTES:
        raise WorkshopConfigError(f"{what} must be at most {MAX_PASSWORD_BYTES} characters, got {len(value)}")
    if not value.strip() or len(set(value)) < MIN_DISTINCT_CHARS:
        raise WorkshopConfigError(f"{what} must use at least {MIN_DISTINCT_CHARS} different characters "
                                  "(not only spaces or one repeated pattern)")
    return value


def load_secrets(path: Path | str) -> dict[str, str]:
    """The secrets file (TOML: ``admin_password``, optionally ``room_password``), refused unless
    only its owner can read it and that owner is root or the account running the hub."""
    import tomllib

    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise WorkshopConfigError(f"no secrets file at {path}; create it with `sudo workshop/.venv/bin/python "
                                  "workshop/hubctl.py secrets` (a random instructor password, readable by root only)"
                                  ) from None
    if not stat.S_ISREG(info.st_mode):
        raise WorkshopConfigError(f"the secrets file {path} is not a regular file")
    if info.st_mode & 0o077:
        raise WorkshopConfigError(f"the secrets file {path} is readable or writable by others (mode "
                                  f"{stat.S_IMODE(info.st_mode):o}); run `chmod 600 {path}`")
    if info.st_uid not in (0, os.getuid()):
        raise WorkshopConfigError(f"the secrets file {path} belongs to uid {info.st_uid}, not root")
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise WorkshopConfigError(f"the secrets file {path} is not valid TOML: {err}") from None
    unknown = set(data) - SECRET_KEYS
    if unknown:
        raise WorkshopConfigError(f"the secrets file {path} has unknown keys {sorted(unknown)}; allowed: "
                                  f"{sorted(SECRET_KEYS)}")
    return {key: check_password(value, f"{key} in {path}") for key, value in data.items()}


def write_secrets(path: Path | str, secrets: dict[str, str]) -> Path:
    """Write ``secrets`` as the secrets file, mode 0600, atomically (a temporary file renamed over it)."""
    path = Path(path)
    for key, value in secrets.items():
        if key not in SECRET_KEYS:
            raise WorkshopConfigError(f"unknown secret {key!r}; allowed: {sorted(SECRET_KEYS)}")
        check_password(value, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        for key, value in secrets.items():
            out.write(f'{key} = "{value}"\n' if '"' not in value and "\\" not in value else f"{key} = '{value}'\n")
    os.replace(tmp, path)
    return path


def check_learner_names(names: list[str]) -> list[str]:
    """The allow-list, each name checked against :data:`USERNAME_PATTERN`."""
    bad = [n for n in names if not re.fullmatch(USERNAME_PATTERN, n)]
    if bad:
        raise WorkshopConfigError(f"learner names {bad} are not allowed: use lower-case letters, digits, '_' or '-', "
                                  "starting with a letter, at most 23 characters")
    return names


# --- failed logins -----------------------------------------------------------------------------------

@dataclass
class LoginThrottle:
    """After ``max_failures`` failed logins within ``window_s`` for one key (a name, or an address),
    every attempt for that key is refused unchecked until ``lockout_s`` after its last failure."""

    max_failures: int = 5
    window_s: float = 300.0
    lockout_s: float = 60.0
    clock: object = time.monotonic
    _failures: dict[str, list[float]] = field(default_factory=dict)

    def _recent(self, key: str, now: float) -> list[float]:
        kept = [t for t in self._failures.get(key, []) if now - t <= self.window_s]
        if kept:
            self._failures[key] = kept
        else:
            self._failures.pop(key, None)
        return kept

    def wait_s(self, *keys: str) -> float:
        """Seconds until any of ``keys`` may try again (0: now)."""
        now = self.clock()
        waits = [0.0]
        for key in keys:
            recent = self._recent(key, now)
            if len(recent) >= self.max_failures:
                waits.append(max(0.0, recent[-1] + self.lockout_s - now))
        return max(waits)

    def failed(self, *keys: str) -> None:
        now = self.clock()
        for key in keys:
            self._failures.setdefault(key, []).append(now)

    def succeeded(self, name_key: str) -> None:
        """A right password clears that name's failures (an address's stay: others share it)."""
        self._failures.pop(name_key, None)


ADDRESS_FAILURES_PER_NAME_LIMIT = 6  #: an address is locked after this many times the per-name limit
SLOW_NAME_FAILURES_PER_LIMIT = 4  #: a name is slowed (never locked) after this many times the limit
SLOW_NAME_DELAY_S = 2.0  #: the delay before checking a slowed name's password


def client_address(handler) -> str:
    """The login's client address for the throttle: the last entry of X-Forwarded-For that is not
    loopback (configurable-http-proxy appends the address it was called from, and a reverse proxy
    on this machine appends the client's), ignoring X-Real-Ip, which a client can set. A process on
    this machine that calls the proxy directly can still forge it: the per-address limit is best
    effort, the per-name-and-address limit is not."""
    import ipaddress

    request = getattr(handler, "request", None)
    if request is None:
        return "?"
    forwarded = [a.strip() for a in request.headers.get("X-Forwarded-For", "").split(",") if a.strip()]
    peer = getattr(getattr(request, "connection", None), "context", None)
    peer = getattr(peer, "address", None)
    chain = forwarded + ([peer[0]] if isinstance(peer, tuple) and peer else [])
    for address in reversed(chain):
        try:
            if not ipaddress.ip_address(address).is_loopback:
                return address
        except ValueError:
            return address  # not an address at all: keep it as the key, never trust what is before it
    return "127.0.0.1"


def _throttle_from_env() -> LoginThrottle:
    def num(name, default):
        raw = os.environ.get(name, "")
        try:
            value = float(raw) if raw else default
        except ValueError:
            raise WorkshopConfigError(f"{name}={raw!r} is not a number of seconds") from None
        if not value > 0:
            raise WorkshopConfigError(f"{name}={raw!r} must be positive")
        return value

    return LoginThrottle(max_failures=int(num("WORKSHOP_LOGIN_MAX_FAILURES", 5)),
                         window_s=num("WORKSHOP_LOGIN_WINDOW_S", 300), lockout_s=num("WORKSHOP_LOGIN_LOCKOUT_S", 60))


# --- the authenticators ------------------------------------------------------------------------------

def _same(given: object, expected: str) -> bool:
    """Constant-time comparison of a typed password with the expected one, as bytes (a str with
    non-ASCII characters would make ``hmac.compare_digest`` raise)."""
    if not isinstance(given, str) or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


class _Throttled:
    """The part both authenticators share: the throttle, the instructor's password, the message.

    Three counters of failed logins, each within the throttle's window:

    - per name AND address: at the limit (5) that pair is refused unchecked for the lockout (60 s).
      Another learner cannot lock a name out from her own address; from the same address (a room
      behind one NAT) she can for a minute at a time, which the hub log shows;
    - per address: at 6 × the limit every login from it is refused for the lockout (password
      spraying from one address);
    - per name: at 4 × the limit each further try for that name waits 2 s before it is checked
      (never a lockout, so no learner can lock another out from many forged addresses).
    """

    def _setup_throttle(self):
        if not hasattr(self, "_throttle"):
            base = _throttle_from_env()
            self._throttle = base
            self._address_throttle = LoginThrottle(max_failures=base.max_failures * ADDRESS_FAILURES_PER_NAME_LIMIT,
                                                   window_s=base.window_s, lockout_s=base.lockout_s, clock=base.clock)
            self._name_failures = LoginThrottle(max_failures=base.max_failures * SLOW_NAME_FAILURES_PER_LIMIT,
                                                window_s=base.window_s, lockout_s=SLOW_NAME_DELAY_S, clock=base.clock)
        return self._throttle

    async def authenticate(self, handler, data):
        import asyncio

        pairs = self._setup_throttle()
        name = self.normalize_username(str((data or {}).get("username", "")))
        address = client_address(handler)
        pair, where, who = f"pair:{name}@{address}", f"address:{address}", f"name:{name}"
        wait = max(pairs.wait_s(pair), self._address_throttle.wait_s(where))
        if wait > 0:
            if handler is not None:
                handler.custom_login_error = f"Too many failed logins. Try again in {wait:.0f} s."
            self.log.warning("login for %r from %s refused unchecked: throttled for %.0f s", name, address, wait)
            return None
        if len(self._name_failures._recent(who, self._name_failures.clock())) >= self._name_failures.max_failures:
            await asyncio.sleep(SLOW_NAME_DELAY_S)
        password = (data or {}).get("password", "")
        if len(str(password).encode("utf-8", "surrogatepass")) > MAX_PASSWORD_BYTES:
            result = None
            if handler is not None:
                handler.custom_login_error = f"Passwords are at most {MAX_PASSWORD_BYTES} characters."
        elif name in (self.admin_users or set()):
            result = name if _same(password, self.workshop_admin_password) else None
        else:
            result = await self._learner_login(handler, {**(data or {}), "username": name})
        if result:
            pairs.succeeded(pair)
        else:
            pairs.failed(pair)
            self._address_throttle.failed(where)
            self._name_failures.failed(who)
        return result


try:  # the hub's own packages (`make hub`); absent where only the course is installed
    from firstuseauthenticator import FirstUseAuthenticator
    from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
    from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
    from traitlets import Integer, Unicode
except ImportError:  # pragma: no cover - tests skip the hub without these
    FirstUseAuthenticator = SharedPasswordAuthenticator = LocalProcessSpawner = None

if FirstUseAuthenticator is not None:

    class WorkshopAuthenticator(_Throttled, FirstUseAuthenticator):
        """A learner's first login sets their password (allow-listed names only); the instructor's
        names use the admin password from the secrets file; failed logins are throttled."""

        workshop_admin_password = Unicode("", config=True, help="the instructor's password (secrets file)")

        async def _learner_login(self, handler, data):
            import dbm

            if data["username"] not in (self.allowed_users or set()):
                return None
            with dbm.open(self.dbm_path, "c", 0o600) as db:
                first = data["username"].encode("utf-8") not in db
            if first:  # this login sets the password: say what is wrong with a weak one
                try:
                    check_password(data.get("password"), "Your new password")
                except WorkshopConfigError as err:
                    if handler is not None:
                        handler.custom_login_error = f"{err}. This first login sets your password."
                    return None
            return await FirstUseAuthenticator.authenticate(self, handler, data)

        def delete_user(self, user):
            """Deleting a learner in the admin panel forgets her password AND removes her system
            account and home, so whoever claims the name next starts clean (no startup files left)."""
            super().delete_user(user)
            if user.name not in (self.admin_users or set()):
                remove_account(user.name)

        def _validate_password(self, password):
            try:
                check_password(password, "password")
            except WorkshopConfigError:
                return False
            return True

    class WorkshopSharedPasswordAuthenticator(_Throttled, SharedPasswordAuthenticator):
        """Opt-in for a trusted room: one room password for every listed name (anyone holding it
        may log in as any listed learner); the instructor's names use the admin password."""

        workshop_admin_password = Unicode("", config=True, help="the instructor's password (secrets file)")
        workshop_room_password = Unicode("", config=True, help="the room password (secrets file)")

        async def _learner_login(self, handler, data):
            if data["username"] not in (self.allowed_users or set()):
                return None
            return data["username"] if _same(data.get("password"), self.workshop_room_password) else None


# --- limits: one cgroup per learner ------------------------------------------------------------------

def parse_size_bytes(text: str) -> int:
    """"2G" → 2 × 2**30 bytes (K, M, G, T are binary multiples, as JupyterHub's mem_limit reads them)."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([KMGT]?)", text.strip())
    if not match:
        raise WorkshopConfigError(f"{text!r} is not a size; use a number with an optional K, M, G or T suffix, e.g. 2G")
    return int(float(match.group(1)) * 1024 ** " KMGT".index(match.group(2) or " "))


@dataclass(frozen=True)
class Cgroups:
    """Where this machine's cgroups live, and how to give one learner a memory limit, a process
    limit and a CPU weight (cgroup v2's unified tree, or v1's controllers mounted one per folder)."""

    root: Path = Path("/sys/fs/cgroup")

    @property
    def version(self) -> int | None:
        if (self.root / "cgroup.controllers").exists():
            return 2
        if all((self.root / c / "cgroup.procs").exists() for c in ("memory", "pids", "cpu")):
            return 1
        return None

    def problem(self) -> str | None:
        """Why learners' limits cannot be enforced here (None when they can)."""
        v = self.version
        if v is None:
            return f"no cgroup v2 tree and no v1 memory, pids and cpu controllers under {self.root}"
        probe = self._dirs("probe-" + str(os.getpid()))
        made = []
        try:
            for d in probe:
                d.mkdir(parents=True, exist_ok=True)
                made.append(d)
        except OSError as err:
            return f"cannot create a cgroup under {self.root} ({err}); the hub must run as root with cgroups writable"
        finally:
            for d in reversed(made):
                try:
                    d.rmdir()
                except OSError:
                    pass
        return None

    def _dirs(self, name: str) -> list[Path]:
        if self.version == 2:
            return [self.root / CGROUP_NAME / name]
        return [self.root / c / CGROUP_NAME / name for c in ("memory", "pids", "cpu")]

    def create(self, name: str, *, memory_bytes: int | None, pids_max: int, cpu_cores: float | None) -> list[Path]:
        """Make (or reuse) the learner's cgroup(s) and set the limits; the ``cgroup.procs`` files a new
        process writes its pid into to join them."""
        v = self.version
        if v == 2:
            parent = self.root / CGROUP_NAME
            parent.mkdir(exist_ok=True)
            _write(self.root / "cgroup.subtree_control", "+memory +pids +cpu")
            _write(parent / "cgroup.subtree_control", "+memory +pids +cpu")
            d = parent / name
            d.mkdir(exist_ok=True)
            if memory_bytes:
                _write(d / "memory.max", str(memory_bytes))
                _write(d / "memory.swap.max", "0", missing_ok=True)
            _write(d / "pids.max", str(pids_max))
            if cpu_cores:
                _write(d / "cpu.max", f"{int(cpu_cores * 100_000)} 100000")
            return [d / "cgroup.procs"]
        if v == 1:
            mem, pids, cpu = self._dirs(name)
            for d in (mem, pids, cpu):
                d.mkdir(parents=True, exist_ok=True)
            if memory_bytes:
                _write(mem / "memory.limit_in_bytes", str(memory_bytes))
                # memory + swap no higher than memory: the limit cannot be escaped into swap
                _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes), missing_ok=True)
            _write(pids / "pids.max", str(pids_max))
            _write(cpu / "cpu.shares", "1024")
            if cpu_cores:
                _write(cpu / "cpu.cfs_period_us", "100000")
                _write(cpu / "cpu.cfs_quota_us", str(int(cpu_cores * 100_000)))
            return [d / "cgroup.procs" for d in (mem, pids, cpu)]
        raise WorkshopConfigError(self.problem() or "no cgroups")

    def remove(self, name: str) -> None:
        """Remove the learner's cgroup(s) once empty (best effort: a cgroup with processes stays)."""
        for d in self._dirs(name):
            try:
                d.rmdir()
            except OSError:
                pass


def _write(path: Path, text: str, missing_ok: bool = False) -> None:
    try:
        path.write_text(text)
    except FileNotFoundError:
        if not missing_ok:
            raise


# --- accounts ----------------------------------------------------------------------------------------

MAX_SOCKET_PATH_BYTES = 107  #: a Unix socket's path (sun_path is 108 bytes with its terminating NUL)


def runtime_dir(home: str) -> str:
    """Where a learner's kernels put their connection files and IPC sockets: a short path in the home."""
    return f"{home}/.jr"


def account_name(learner: str) -> str:
    return ACCOUNT_PREFIX + learner


def remove_owned_files(uid: int, folders=("/dev/shm", "/tmp", "/var/tmp")) -> list[str]:
    """Delete what account ``uid`` left at the top of the shared scratch folders (files in /dev/shm
    count against her memory limit and outlive her processes). Symlinks are unlinked, never
    followed. Returns what was removed."""
    import shutil

    removed = []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid != uid:
                continue
            try:
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
                removed.append(entry.path)
            except OSError:
                pass
    return removed


def remove_account(learner: str) -> bool:
    """Kill every process of ``learner``'s account, delete her leftovers in the scratch folders, the
    account and its home — only an account this workshop made. True when one was removed."""
    name = account_name(learner)
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return False
    if entry.pw_gecos != ACCOUNT_MARK or entry.pw_uid < 1000:
        return False
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    time.sleep(0.2)
    remove_owned_files(entry.pw_uid)
    subprocess.run(["userdel", "--remove", name], capture_output=True)
    if Path(entry.pw_dir).exists():
        import shutil

        shutil.rmtree(entry.pw_dir, ignore_errors=True)
    Cgroups().remove(name)
    return True


def ensure_account(learner: str, homes_dir: Path, allowed: set[str]) -> pwd.struct_passwd:
    """The system account of ``learner`` (made now with a 0700 home if it does not exist yet), only
    for an allow-listed name; an existing account of that name that this hub did not make is refused."""
    if learner not in allowed or not re.fullmatch(USERNAME_PATTERN, learner):
        raise PermissionError(f"{learner!r} is not on the workshop's allow-list; no account is made for it")
    name = account_name(learner)
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        home = Path(homes_dir) / name
        subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/usr/sbin/nologin",
                        "--user-group", "--comment", ACCOUNT_MARK, "--key", "UMASK=0077", "--no-log-init", name],
                       check=True, capture_output=True, text=True)
        entry = pwd.getpwnam(name)
    if entry.pw_gecos != ACCOUNT_MARK or entry.pw_uid < 1000:
        raise PermissionError(f"the account {name} exists but was not made by this workshop hub "
                              f"(comment {entry.pw_gecos!r}, uid {entry.pw_uid}); it is never used")
    home = Path(entry.pw_dir)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    os.chmod(home, 0o700)
    return entry


if LocalProcessSpawner is not None:

    class WorkshopSpawner(LocalProcessSpawner):
        """Each learner's server as their own system account, in their own cgroup, kernels over IPC."""

        homes_dir = Unicode("/home", config=True, help="where learners' homes are made (jupyter-<name>)")
        pids_limit = Integer(512, config=True, help="most processes (and threads) one learner may run")
        cgroup_root = Unicode("/sys/fs/cgroup", config=True, help="the cgroup mount")

        @property
        def system_name(self) -> str:
            return account_name(self.user.name)

        def _allowed(self) -> set[str]:
            auth = self.authenticator
            return set(getattr(auth, "allowed_users", None) or ()) | set(getattr(auth, "admin_users", None) or ())

        async def start(self):
            entry = ensure_account(self.user.name, Path(self.homes_dir), self._allowed())
            longest = len(runtime_dir(entry.pw_dir)) + len("/kernel-00000000-0000-0000-0000-000000000000-ipc-4")
            if longest > MAX_SOCKET_PATH_BYTES:
                raise WorkshopConfigError(f"{entry.pw_dir} is too long a home for kernels' IPC sockets ({longest} > "
                                          f"{MAX_SOCKET_PATH_BYTES} bytes); use a shorter WORKSHOP_HOMES_DIR")
            self.notebook_dir = entry.pw_dir
            remove_owned_files(entry.pw_uid)  # what a killed server left in /dev/shm would count against her limit
            memory = parse_size_bytes(str(self.mem_limit)) if self.mem_limit else None
            self._cgroup_procs = Cgroups(Path(self.cgroup_root)).create(
                self.system_name, memory_bytes=memory, pids_max=int(self.pids_limit), cpu_cores=self.cpu_limit)
            return await super().start()

        async def stop(self, now=False):
            await super().stop(now=now)
            try:
                remove_owned_files(pwd.getpwnam(self.system_name).pw_uid)
            except KeyError:
                pass
            Cgroups(Path(self.cgroup_root)).remove(self.system_name)

        def make_preexec_fn(self, name):
            become = set_user_setuid(self.system_name)
            procs = list(getattr(self, "_cgroup_procs", []))

            def preexec():
                for path in procs:  # join the learner's cgroups while still root, before dropping to them
                    with open(path, "w") as f:
                        f.write(str(os.getpid()))
                os.umask(0o077)
                become()

            return preexec

        def user_env(self, env):
            entry = pwd.getpwnam(self.system_name)
            env["USER"] = entry.pw_name
            env["HOME"] = entry.pw_dir
            env["SHELL"] = entry.pw_shell or "/usr/sbin/nologin"
            # kernels' IPC sockets live beside their connection files: a short path in the 0700 home,
            # since a Unix socket's path is at most 107 bytes
            env["JUPYTER_RUNTIME_DIR"] = runtime_dir(entry.pw_dir)
            return env


def write_git_config(path: Path, course_repo: str) -> Path:
    """A git config (mode 644, written atomically) that lets learners' accounts clone a local course
    source root owns: ``safe.directory`` for that path only (none for a remote URL)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# written by workshop/jupyterhub_config.py at each start\n"
    if course_repo.startswith("file://"):
        local = course_repo[len("file://"):]
        text += f"[safe]\n\tdirectory = {local}\n\tdirectory = {local.rstrip('/')}/.git\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def readable_by_learners(path: Path) -> str | None:
    """Why another account could not read ``path`` (a folder on its way lacks o+x, or the file o+r);
    None when it can."""
    path = Path(path).resolve()
    for part in [*reversed(path.parents), path]:
        try:
            mode = part.stat().st_mode
        except OSError as err:
            return f"{part}: {err}"
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return f"{part} is not searchable by other accounts (mode {stat.S_IMODE(mode):o})"
    if path.is_file() and not path.stat().st_mode & stat.S_IROTH:
        return f"{path} is not readable by other accounts"
    return None


def writable_by_learners(path: Path, depth: int | None = None) -> str | None:
    """The first file or folder under ``path`` (every level, or ``depth`` levels) that a learner's account could
    write: not owned by root, world-writable, or group-writable by a group that has members (a
    learner's account is in its own group only). None when there is none."""
    import grp
    path = Path(path)
    todo = [(path, 0)]
    while todo:
        p, level = todo.pop()
        try:
            info = p.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            continue
        try:
            members = grp.getgrgid(info.st_gid).gr_mem if info.st_gid != 0 else []
        except KeyError:
            members = ["(unknown group)"]
        if info.st_uid != 0 or info.st_mode & 0o002 or (info.st_mode & 0o020 and members):
            return f"{p} (owner uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):o})"
        if stat.S_ISDIR(info.st_mode) and (depth is None or level < depth):
            try:
                todo.extend((c, level + 1) for c in p.iterdir())
            except OSError:
                continue
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit("workshop_hub is loaded by workshop/jupyterhub_config.py; see workshop/README.md")
