"""The workshop JupyterHub (workshop/jupyterhub_config.py, workshop/workshop_hub.py), started for real as
root on free loopback ports with two learners, ada and grace, each with their own password.

Most tests are attacks a learner could try from her own kernel, each of which must fail: read or
write another learner's home, notebooks, connection files or server token; signal, renice or
re-score another learner's processes or the hub's; read the hub's cookie secret, database,
passwords, secrets file or proxy token; write the course environment or the course's git source;
log in as another learner with her own password; exhaust memory past her limit (only her kernel
dies) or fork past her process limit. The rest check that the room still works: the course arrives
by nbgitpuller, an update merges while a learner's edit survives, the idle culler runs, everything
listens on loopback only, and the config refuses what is unsafe.

Needs root, cgroups, `useradd` and `make hub` (the hub's own environment from PyPI and its proxy
from npm). Without them the tests skip locally, naming what is missing; with CI=true they fail.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workshop"))
import hubctl  # noqa: E402
import workshop_hub  # noqa: E402

IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
LEARNERS = ("ada", "grace")  #: logged in and running a server for the whole module
LISTED = LEARNERS + ("alan",)  #: alan is on the list too: his first login, his deletion
#: test-only passwords, random per run: the hub lives on loopback for the length of this module
PASSWORDS = {name: f"{name}-{os.urandom(6).hex()}-pw" for name in LISTED}
ADMIN_PASSWORD = f"instructor-{os.urandom(8).hex()}"
LESSON1_PATH = f"{hubctl.TARGET_DIR}/{hubctl.LESSON1}"
EDIT_MARK = "my own note, written during the workshop"
UPSTREAM_MARK = "An update the instructor committed after the first pull."
NEWS_FILE = "workshop-news.md"
SECRET_PREFIXES = ("WORKSHOP_", "CONFIGPROXY_", "JPY_COOKIE")
MEM_LIMIT_BYTES = 768 * 2**20
PIDS_LIMIT = 128
LOCKOUT_S = 3.0
MAX_FAILURES = 4
#: how long a spawn, a pull or a cell may take before the test gives up: a deadline generous enough for
#: a machine busy with other work (every wait returns as soon as its condition holds), not a speed
#: target — benchmarks/hub_load.py measures how fast the hub is
DEADLINE_S = 300
CULL_ARGS = ("--MappingKernelManager.cull_idle_timeout=1200", "--MappingKernelManager.cull_interval=120")


def _require_hub() -> None:
    gaps = hubctl.missing()
    if gaps:
        message = "the workshop hub cannot run here; missing: " + "; ".join(gaps)
        if IN_CI:
            pytest.fail(message + ". CI=true, so a missing dependency is a failure, not a skip.")
        pytest.skip(message + ".")


@pytest.fixture(scope="module")
def base():
    """A scratch folder every account can traverse (pytest's own tmp folders are root-only)."""
    _require_hub()
    path = Path(tempfile.mkdtemp(prefix="wh-", dir="/tmp"))
    os.chmod(path, 0o755)
    (path / "h").mkdir(mode=0o755)
    os.chmod(path / "h", 0o755)
    yield path
    hubctl.remove_accounts(LISTED, path / "h")
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def course(base):
    # always a scratch copy: test_an_update_arrives_and_a_learners_edit_survives commits to it
    (base / "course").mkdir(mode=0o755)
    return hubctl.course_source(base / "course", copy=True)


@pytest.fixture(scope="module")
def hub(base, course):
    repo, branch = course
    hubctl.remove_accounts(LISTED, base / "h")  # what a crashed earlier run left
    with hubctl.Hub(base / "hub", LISTED, {"admin_password": ADMIN_PASSWORD}, homes_dir=base / "h",
                    cull_every_s=60, spawn_timeout_s=DEADLINE_S,
                    extra_env={"WORKSHOP_COURSE_REPO": repo, "WORKSHOP_COURSE_BRANCH": branch,
                               "WORKSHOP_MEM_LIMIT": str(MEM_LIMIT_BYTES), "WORKSHOP_PIDS_LIMIT": str(PIDS_LIMIT),
                               "WORKSHOP_LOGIN_MAX_FAILURES": str(MAX_FAILURES),
                               "WORKSHOP_LOGIN_WINDOW_S": "30", "WORKSHOP_LOGIN_LOCKOUT_S": str(LOCKOUT_S)}) as h:
        yield h


def _login(hub, name: str, password: str) -> hubctl.Learner:
    """Log ``name`` in, waiting out a lockout an earlier test's wrong passwords left on this address."""
    learner = hubctl.Learner(hub.url, name, timeout_s=DEADLINE_S)
    if not learner.login(password) and "Too many failed logins" in learner.login_page:
        time.sleep(LOCKOUT_S + 0.5)
        learner = hubctl.Learner(hub.url, name, timeout_s=DEADLINE_S)
        learner.login(password)
    assert learner.token, f"{name} was refused with the right password:\n{hub.log_tail()}"
    return learner


@pytest.fixture(scope="module")
def learners(hub, course):
    """Both learners logged in (their first login set their passwords), servers started, course pulled."""
    repo, branch = course
    out = {}
    for name in LEARNERS:
        learner = _login(hub, name, PASSWORDS[name])
        learner.spawn(timeout_s=DEADLINE_S)
        learner.pull(repo, branch, timeout_s=DEADLINE_S)
        out[name] = learner
    return out


@pytest.fixture(scope="module")
def kernels(learners):
    """A kernel for each learner, opened on lesson 1."""
    return {name: learner.start_kernel(LESSON1_PATH) for name, learner in learners.items()}


def _home(base, name) -> Path:
    return base / "h" / workshop_hub.account_name(name)


# --- accounts and homes ------------------------------------------------------------------------------

def test_each_learner_runs_as_their_own_account_with_a_private_home(hub, base, learners):
    trees = hub.learner_processes()
    assert set(LEARNERS) <= set(trees), f"running learner servers: {sorted(trees)}"
    for name in LEARNERS:
        entry = pwd.getpwnam(workshop_hub.account_name(name))
        assert entry.pw_uid >= 1000 and entry.pw_gecos == workshop_hub.ACCOUNT_MARK
        home = _home(base, name)
        info = home.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (entry.pw_uid, 0o700), f"{home}: {info}"
        server = trees[name][0]
        assert server.uids().real == entry.pw_uid and server.uids().effective == entry.pw_uid
        assert Path(server.cwd()) == home
        leaked = sorted(k for k in server.environ() if k.startswith(SECRET_PREFIXES))
        assert not leaked, f"{name}'s server inherited {leaked}"
        assert set(CULL_ARGS) <= set(server.cmdline()) and "--KernelManager.transport=ipc" in server.cmdline()
        model = learners[name].api("GET", f"/users/{name}").json()
        assert model["servers"][""]["ready"] is True and model["admin"] is False


def test_hub_state_is_root_only(hub):
    data = Path(hub.data_dir)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700 and data.stat().st_uid == 0
    secrets = data / "secrets.toml"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600


def test_a_name_not_on_the_list_is_refused_and_gets_no_account(hub):
    assert not hubctl.Learner(hub.url, "mallory").login("a-perfectly-long-password")
    with pytest.raises(KeyError):
        pwd.getpwnam(workshop_hub.account_name("mallory"))
    r = hubctl.Learner(hub.url, "mallory").api("GET", "/users/mallory")
    assert r.status_code in (401, 403)
    time.sleep(LOCKOUT_S + 0.5)


def test_a_learner_cannot_log_in_as_another_with_her_own_password(hub, learners):
    assert not hubctl.Learner(hub.url, "grace").login(PASSWORDS["ada"])
    # the instructor's name never opens by first use, nor with a learner's password
    assert not hubctl.Learner(hub.url, "instructor").login(PASSWORDS["ada"])
    assert not hubctl.Learner(hub.url, "instructor").login("a-new-password-for-instructor")
    time.sleep(LOCKOUT_S + 0.5)
    assert _login(hub, "instructor", ADMIN_PASSWORD).api("GET", "/users/instructor").json()["admin"] is True


def test_failed_logins_lock_that_name_from_that_address_only(hub, learners):
    for _ in range(MAX_FAILURES):
        assert not hubctl.Learner(hub.url, "grace").login("wrong-password-for-grace")
    locked = hubctl.Learner(hub.url, "grace")
    assert not locked.login(PASSWORDS["grace"]), "the right password passed during a lockout"
    assert "Too many failed logins" in locked.login_page
    # a client-set X-Real-Ip does not move the login to another address
    spoofed = hubctl.Learner(hub.url, "grace")
    spoofed.session.headers["X-Real-Ip"] = "10.11.12.13"
    assert not spoofed.login(PASSWORDS["grace"]) and "Too many failed logins" in spoofed.login_page
    # ...and grace's failures do not lock anyone else out of this (shared) address
    assert hubctl.Learner(hub.url, "ada").login(PASSWORDS["ada"]), "one learner's typos locked out another"
    time.sleep(LOCKOUT_S + 0.5)
    assert hubctl.Learner(hub.url, "grace").login(PASSWORDS["grace"])


def test_a_weak_first_password_is_refused_with_the_reason(hub):
    for weak, reason in (("short-pw", "at least 12"), ("abababababababab", "different characters")):
        alan = hubctl.Learner(hub.url, "alan")
        assert not alan.login(weak)
        assert reason in alan.login_page and "first login sets your password" in alan.login_page
    with pytest.raises(KeyError):
        pwd.getpwnam(workshop_hub.account_name("alan"))
    time.sleep(LOCKOUT_S + 0.5)


# --- attacks from ada's kernel -------------------------------------------------------------------------

ATTEMPT = '''
import errno, json, os, signal
results = {}
def attempt(what, action):
    try:
        action()
        results[what] = "ok"
    except OSError as err:
        results[what] = errno.errorcode.get(err.errno, str(err.errno))
'''


def _attacks(ada, kernel, code: str) -> dict[str, str]:
    out = ada.run(kernel, ATTEMPT + code + "\nprint(json.dumps(results))", timeout_s=DEADLINE_S)
    return json.loads(out.strip().splitlines()[-1])


def _proxy_pid(hub) -> int:
    return next(p.pid for p in hub.descendants() if "configurable-http-proxy" in " ".join(p.cmdline()))


def test_a_learner_cannot_touch_another_learners_files(hub, base, learners, kernels):
    grace = _home(base, "grace")
    results = _attacks(learners["ada"], kernels["ada"], f'''
grace = {str(grace)!r}
attempt("list grace's home", lambda: os.listdir(grace))
attempt("read grace's lesson", lambda: open(grace + "/{LESSON1_PATH}").read())
attempt("write in grace's home", lambda: open(grace + "/planted.py", "w").write("print('hi')"))
attempt("plant grace's IPython startup", lambda: os.makedirs(grace + "/.ipython/profile_default/startup"))
attempt("list grace's connection files", lambda: os.listdir({workshop_hub.runtime_dir(str(grace))!r}))
''')
    assert results and all(v in ("EACCES", "EPERM") for v in results.values()), results


def test_a_learner_cannot_read_secrets_or_signal_others(hub, base, learners, kernels):
    grace_server = hub.learner_processes()["grace"][0].pid
    targets = {"grace's server": grace_server, "the hub": hub.proc.pid, "the proxy": _proxy_pid(hub)}
    data = Path(hub.data_dir)
    results = _attacks(learners["ada"], kernels["ada"], f'''
for what, pid in {targets!r}.items():
    attempt(f"read {{what}}'s environment", lambda: open(f"/proc/{{pid}}/environ", "rb").read())
    attempt(f"signal {{what}}", lambda: os.kill(pid, 0))
    attempt(f"renice {{what}}", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
    attempt(f"raise {{what}}'s OOM score", lambda: open(f"/proc/{{pid}}/oom_score_adj", "w").write("1000"))
data = {str(data)!r}
attempt("list the hub's data folder", lambda: os.listdir(data))
for name in ("jupyterhub_cookie_secret", "jupyterhub.sqlite", "secrets.toml", "passwords.dbm", "passwords.dbm.db"):
    attempt("read " + name, lambda: open(data + "/" + name, "rb").read())
''')
    assert results and all(v in ("EACCES", "EPERM") for v in results.values()), results


def test_a_learner_cannot_write_the_course_environment_or_its_source(hub, course, learners, kernels):
    repo, _ = course
    site = next(Path(hubctl.HUB_VENV).glob("lib/python3*/site-packages"))
    results = _attacks(learners["ada"], kernels["ada"], f'''
attempt("plant a .pth in the hub's environment", lambda: open({str(site)!r} + "/planted.pth", "w").write("x"))
attempt("write the hub's config", lambda: open({str(hubctl.CONFIG)!r}, "a").write("# planted"))
attempt("write the course checkout", lambda: open({str(ROOT)!r} + "/planted.py", "w").write("x"))
attempt("write the course's git source", lambda: open({repo[len("file://"):]!r} + "/planted", "w").write("x"))
''')
    assert results and all(v in ("EACCES", "EPERM", "EROFS") for v in results.values()), results


def test_kernels_talk_over_ipc_and_cannot_be_overheard(hub, learners, kernels):
    """The kernel's channels are IPC sockets in the 0700 home. The one TCP port an ipykernel still
    opens on loopback (a PULL socket for forked subprocesses' output, keyed by a random 16 bytes)
    only receives: ada subscribes to every TCP port grace's kernel listens on while grace prints,
    and hears nothing."""
    import threading

    import psutil

    out = learners["ada"].run(kernels["ada"], "import json\nfrom ipykernel.connect import get_connection_file\n"
                                              "print(json.load(open(get_connection_file()))['transport'])")
    assert out.strip() == "ipc"
    ports = [c.laddr.port for p in hub.learner_processes()["grace"][1:]
             for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    heard = {}

    def listen():
        heard["out"] = learners["ada"].run(kernels["ada"], f"""
import time, zmq
ctx = zmq.Context()
subs = []
for port in {ports!r}:
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.connect(f"tcp://127.0.0.1:{{port}}")
    subs.append(s)
poller = zmq.Poller()
for s in subs:
    poller.register(s, zmq.POLLIN)
got, end = 0, time.monotonic() + 4
while time.monotonic() < end:
    got += len(poller.poll(200))
print(got)
""", timeout_s=DEADLINE_S)

    thread = threading.Thread(target=listen)
    thread.start()
    time.sleep(1.0)
    learners["grace"].run(kernels["grace"], "import time\nfor i in range(20):\n    print('grace secret', i)\n"
                                            "    time.sleep(0.1)")
    thread.join(timeout=DEADLINE_S)
    assert heard.get("out", "").strip() == "0", heard


def test_a_learners_kernel_imports_the_course_and_sees_no_secrets(learners, kernels):
    learners["ada"].execute(kernels["ada"], [
        "import os, numpy, roofline_lessons",
        "assert numpy.ones(3).sum() == 3 and roofline_lessons.__name__ == 'roofline_lessons'",
        (f"leaked = [k for k in os.environ if k.startswith({SECRET_PREFIXES!r})]\n"
         "assert not leaked, leaked"),
    ], timeout_s=DEADLINE_S)


# --- limits --------------------------------------------------------------------------------------------

def _cgroup_file(name: str, controller: str, filename: str) -> Path:
    cg = workshop_hub.Cgroups()
    account = workshop_hub.account_name(name)
    if cg.version == 2:
        return cg.root / workshop_hub.CGROUP_NAME / account / filename
    return cg.root / controller / workshop_hub.CGROUP_NAME / account / filename


def test_each_learner_has_enforced_memory_and_process_limits(hub, learners):
    v2 = workshop_hub.Cgroups().version == 2
    memory = _cgroup_file("ada", "memory", "memory.max" if v2 else "memory.limit_in_bytes")
    assert int(memory.read_text()) == MEM_LIMIT_BYTES
    assert int(_cgroup_file("ada", "pids", "pids.max").read_text()) == PIDS_LIMIT
    server = hub.learner_processes()["ada"][0].pid
    procs = _cgroup_file("ada", "memory", "cgroup.procs").read_text().split()
    assert str(server) in procs, "ada's server is not in her memory cgroup"


def test_a_fork_loop_stops_at_the_learners_own_limit(hub, learners, kernels):
    out = learners["ada"].run(kernels["ada"], '''
import errno, os, time
children, failure = [], None
try:
    for _ in range(1000):
        pid = os.fork()
        if pid == 0:
            time.sleep(2)
            os._exit(0)
        children.append(pid)
except OSError as err:
    failure = errno.errorcode.get(err.errno)
for pid in children:
    os.waitpid(pid, 0)
print(len(children), failure)
''', timeout_s=DEADLINE_S)
    made, failure = out.split()
    assert failure == "EAGAIN" and int(made) < PIDS_LIMIT, out
    assert hubctl.Learner(hub.url, "nobody").api("GET", "/").status_code == 200, "the hub stopped answering"


def test_an_out_of_memory_cell_kills_only_that_learners_kernel(hub, learners, kernels):
    ada, grace = learners["ada"], learners["grace"]
    victim = ada.start_kernel(f"{hubctl.TARGET_DIR}/memory-hog.ipynb")  # its own kernel, not the shared one
    with pytest.raises(hubctl.HubError):
        ada.execute(victim, [f"hog = b'x' * {2 * MEM_LIMIT_BYTES}"], timeout_s=60)
    assert hub.proc.poll() is None, "the hub died"
    assert hubctl.Learner(hub.url, "nobody").api("GET", "/").status_code == 200, "the hub stopped answering"
    assert grace.run(kernels["grace"], "print(6 * 7)").strip() == "42", "grace's kernel was hit"
    assert "ada" in hub.learner_processes(), f"ada's server died, not just her kernel:\n{hub.log_tail(60)}"
    fresh = ada.start_kernel(LESSON1_PATH)
    assert ada.run(fresh, "print('still here')").strip() == "still here"


# --- the room still works ------------------------------------------------------------------------------

def test_nbgitpuller_delivers_the_course_to_each_learner(hub, base, learners):
    for name, learner in learners.items():
        assert (_home(base, name) / LESSON1_PATH).exists(), f"{name} has no {LESSON1_PATH}"
        cells = hubctl.notebook_code_cells(learner.contents(LESSON1_PATH)["content"])
        assert any("roofline_lessons" in code for code in cells)


def test_logging_in_lands_on_the_course_pull_link(hub, course, learners):
    repo, branch = course
    learner = _login(hub, "ada", PASSWORDS["ada"])
    assert learner.landing.endswith(hubctl.pull_link(repo, branch)), learner.landing


def _commit_upstream(repo: str, branch: str, work: Path) -> None:
    """The instructor's update, committed to the scratch course repository: a new file, and a change to
    lesson 1's LAST cell (the learner edits the first)."""
    def git(*args, cwd=work):
        done = subprocess.run(["git", "-c", "user.name=Instructor", "-c", "user.email=instructor@example.org",
                               *args], cwd=cwd, capture_output=True, text=True, timeout=DEADLINE_S, check=False)
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"

    git("clone", "--quiet", "--branch", branch, repo, str(work), cwd=work.parent)
    (work / NEWS_FILE).write_text("# News\n\nLesson 1 has a new closing remark.\n")
    lesson = work / hubctl.LESSON1
    notebook = json.loads(lesson.read_text())
    last = notebook["cells"][-1]
    last["source"] = ["".join(last["source"]).rstrip("\n") + "\n", "\n", UPSTREAM_MARK]
    lesson.write_text(json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    git("add", NEWS_FILE, hubctl.LESSON1)
    git("commit", "--quiet", "-m", "an update after the first pull")
    git("push", "--quiet", "origin", branch)


def test_an_update_arrives_and_a_learners_edit_survives_a_second_pull(hub, base, learners, course, tmp_path):
    repo, branch = course
    ada, grace = learners["ada"], learners["grace"]
    notebook = ada.contents(LESSON1_PATH)["content"]
    notebook["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": EDIT_MARK})
    ada.save_notebook(LESSON1_PATH, notebook)
    _commit_upstream(repo, branch, tmp_path / "instructor")
    home = _home(base, "ada") / hubctl.TARGET_DIR
    assert not (home / NEWS_FILE).exists()
    events = ada.pull(repo, branch, timeout_s=DEADLINE_S)
    assert events[-1]["phase"] == "finished"
    assert (home / NEWS_FILE).exists(), "the new commit's file did not arrive"
    after = ada.contents(LESSON1_PATH)["content"]
    assert after["cells"][0]["source"] == EDIT_MARK
    assert UPSTREAM_MARK in "".join(after["cells"][-1]["source"]), "the update to lesson 1 was not merged"
    on_disk = json.loads((_home(base, "ada") / LESSON1_PATH).read_text())
    assert "".join(on_disk["cells"][0]["source"]) == EDIT_MARK
    assert EDIT_MARK not in json.dumps(grace.contents(LESSON1_PATH)["content"])


def test_the_idle_culler_is_a_hub_service(hub, learners):
    admin = _login(hub, "instructor", ADMIN_PASSWORD)
    services = admin.api("GET", "/services").json()
    assert "idle-culler" in services, f"services: {sorted(services)}"
    culler = services["idle-culler"]
    assert "jupyterhub_idle_culler" in " ".join(culler["command"])
    running = [p for p in hub.descendants() if "jupyterhub_idle_culler" in " ".join(p.cmdline())]
    assert running, "the idle-culler service is not running"


def test_everything_listens_on_loopback_only(hub, learners):
    import psutil

    listening = []
    for p in [psutil.Process(hub.proc.pid), *hub.descendants()]:
        try:
            listening += [c.laddr for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        except psutil.NoSuchProcess:
            continue
    assert listening, "found no listening sockets at all"
    assert all(addr.ip in ("127.0.0.1", "::1") for addr in listening), listening


def test_a_stopped_or_deleted_learner_leaves_nothing_behind(hub, base, learners):
    """What alan leaves in /dev/shm (it counts against his memory limit and outlives his processes)
    goes when his server stops; deleting him in the admin panel removes his account and home and
    forgets his password, so the next first login of that name starts clean."""
    alan = _login(hub, "alan", PASSWORDS["alan"])
    alan.spawn(timeout_s=DEADLINE_S)
    kernel = alan.start_kernel("scratch.ipynb")
    planted = f"/dev/shm/alan-{os.urandom(4).hex()}"
    alan.run(kernel, f"open({planted!r}, 'wb').write(b'x' * 2**20)")
    assert Path(planted).exists()
    alan.stop_server()
    deadline = time.monotonic() + DEADLINE_S
    while (alan.api("GET", "/users/alan").json().get("servers") or {}) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(planted).exists(), "alan's /dev/shm file outlived his server"
    admin = _login(hub, "instructor", ADMIN_PASSWORD)
    assert admin.api("DELETE", "/users/alan").status_code == 204
    with pytest.raises(KeyError):
        pwd.getpwnam(workshop_hub.account_name("alan"))
    assert not _home(base, "alan").exists()
    assert _login(hub, "alan", "a-brand-new-password-for-alan").token, "the deleted name's password was kept"


# --- the config's refusals (loaded by the hub's own Python, as JupyterHub would) ------------------------

LOADER = '''
import json, runpy, sys
from traitlets.config import Config
config = Config()
try:
    runpy.run_path(sys.argv[1], init_globals={"get_config": lambda: config})
except SystemExit as stop:
    print(json.dumps({"refused": str(stop.code)}))
else:
    spawner, hub = config.Spawner, config.JupyterHub
    print(json.dumps({"refused": "", "ssl_cert": hub.get("ssl_cert"), "mem_limit": spawner.get("mem_limit"),
                      "cpu_limit": spawner.get("cpu_limit"), "env_keep": list(spawner.get("env_keep", [])),
                      "environment": sorted(spawner.get("environment", {})), "args": list(spawner.get("args", [])),
                      "disable_user_config": spawner.get("disable_user_config"),
                      "pids_limit": config.WorkshopSpawner.get("pids_limit"),
                      "subdomain_host": hub.get("subdomain_host"),
                      "authenticator": str(hub.get("authenticator_class"))}))
'''


def _load_config(base: Path, secrets: dict | None = None, **env) -> dict:
    """Load workshop/jupyterhub_config.py in the hub's Python with only ``env`` as WORKSHOP_* settings."""
    data = Path(tempfile.mkdtemp(prefix="cfg-", dir=base))
    if secrets is not False:
        workshop_hub.write_secrets(data / "secrets.toml", secrets or {"admin_password": ADMIN_PASSWORD})
    settings = {"WORKSHOP_DATA_DIR": str(data), "WORKSHOP_LEARNERS": "ada,grace",
                "WORKSHOP_COURSE_REPO": "https://example.org/course.git", "WORKSHOP_COURSE_BRANCH": "main", **env}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WORKSHOP_")}
    clean.update({k: v for k, v in settings.items() if v is not None})
    done = subprocess.run([str(hubctl.HUB_PYTHON), "-c", LOADER, str(hubctl.CONFIG)], env=clean, cwd=data,
                          capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("env, refusal", [
    ({"WORKSHOP_IP": "0.0.0.0"}, "refusing plain HTTP on WORKSHOP_IP='0.0.0.0'"),
    ({"WORKSHOP_SSL_CERT": "/etc/hub.crt"}, "set both WORKSHOP_SSL_CERT and WORKSHOP_SSL_KEY"),
    ({"WORKSHOP_MEM_LIMIT": "lots"}, "'lots' is not a size"),
    ({"WORKSHOP_CPU_LIMIT": "0"}, "WORKSHOP_CPU_LIMIT='0' is not a positive number"),
    ({"WORKSHOP_LEARNERS": ""}, "set WORKSHOP_LEARNERS"),
    ({"WORKSHOP_LEARNERS": "Ada,root!"}, "are not allowed"),
    ({"WORKSHOP_ADMINS": "ada"}, "both learners and instructors"),
    ({"WORKSHOP_AUTH": "shared-password"}, "needs room_password"),
    ({"WORKSHOP_AUTH": "anyone"}, "WORKSHOP_AUTH='anyone'"),
    ({"WORKSHOP_LOGIN_LOCKOUT_S": "soon"}, "WORKSHOP_LOGIN_LOCKOUT_S='soon'"),
    ({"WORKSHOP_SUBDOMAIN_HOST": "hub.example.org"}, "WORKSHOP_SUBDOMAIN_HOST='hub.example.org'"),
])
def test_the_config_refuses_unsafe_or_malformed_settings(base, env, refusal):
    message = _load_config(base, **env)["refused"]
    assert refusal in message, message
    assert "\n" not in message, "a refusal is one line"


@pytest.mark.parametrize("secret, refusal", [
    ("12345678", "at least 12 characters"),
    (" " * 14, "different characters"),
    ("pässwort-lang-genug", "printable ASCII"),
    ("abababababababab", "different characters"),
])
def test_weak_or_non_ascii_passwords_are_refused_at_start(base, secret, refusal):
    data = Path(tempfile.mkdtemp(prefix="pw-", dir=base))
    (data / "secrets.toml").write_text(f'admin_password = "{secret}"\n')
    os.chmod(data / "secrets.toml", 0o600)
    message = _load_config(base, secrets=False, WORKSHOP_SECRETS_FILE=str(data / "secrets.toml"))["refused"]
    assert refusal in message, message


def test_a_secrets_file_others_can_read_is_refused(base):
    data = Path(tempfile.mkdtemp(prefix="pw-", dir=base))
    workshop_hub.write_secrets(data / "secrets.toml", {"admin_password": ADMIN_PASSWORD})
    os.chmod(data / "secrets.toml", 0o644)
    message = _load_config(base, secrets=False, WORKSHOP_SECRETS_FILE=str(data / "secrets.toml"))["refused"]
    assert "readable or writable by others" in message


def test_the_config_refuses_to_run_as_anyone_but_root(base):
    """Without root the hub could not start learners as their own accounts: it refuses, naming why."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to load the config as another account")
    done = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", str(hubctl.HUB_PYTHON), "-c",
                           LOADER, str(hubctl.CONFIG)], capture_output=True, text=True, timeout=DEADLINE_S, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "WORKSHOP_LEARNERS": "ada"})
    assert "run it as root" in done.stdout, done.stdout + done.stderr[-1000:]


def test_the_config_accepts_tls_and_keeps_secrets_from_learners(base):
    loaded = _load_config(base, WORKSHOP_IP="0.0.0.0", WORKSHOP_SSL_CERT="/etc/hub.crt",
                          WORKSHOP_SSL_KEY="/etc/hub.key", WORKSHOP_CPU_LIMIT="0.5")
    assert loaded["refused"] == "" and loaded["ssl_cert"] == "/etc/hub.crt"
    assert loaded["mem_limit"] == 2 * 2**30 and loaded["cpu_limit"] == 0.5  # the default 2G, enforced
    assert loaded["pids_limit"] == 512 and loaded["subdomain_host"] is None  # the defaults the README gives
    assert loaded["disable_user_config"] is True and "WorkshopAuthenticator" in loaded["authenticator"]
    assert not [k for k in [*loaded["env_keep"], *loaded["environment"]] if k.startswith(SECRET_PREFIXES)]
    assert set(CULL_ARGS) <= set(loaded["args"]) and "--KernelManager.transport=ipc" in loaded["args"]
    shared = _load_config(base, secrets={"admin_password": ADMIN_PASSWORD, "room_password": "a-room-password-1"},
                          WORKSHOP_AUTH="shared-password")
    assert shared["refused"] == "" and "SharedPassword" in shared["authenticator"]
    isolated = _load_config(base, WORKSHOP_SUBDOMAIN_HOST="https://hub.example.org")
    assert isolated["refused"] == "" and isolated["subdomain_host"] == "https://hub.example.org"


def test_the_kubernetes_values_use_the_same_pull_link_and_enforced_limits():
    """workshop/values.yaml (Zero to JupyterHub): the learners land on the same nbgitpuller link as on
    the one-machine hub, limits and the culler are set, and no password is written in the file."""
    yaml = pytest.importorskip("yaml")
    values = yaml.safe_load((ROOT / "workshop" / "values.yaml").read_text())
    config = values["hub"]["config"]
    public = hubctl.pull_link("https://github.com/ORG/REPO", "main")
    expected = public.replace("ORG", "<org>").replace("REPO", "<repo>")  # placeholders, left readable
    assert config["JupyterHub"]["default_url"] == expected
    assert "--set-string" not in (ROOT / "workshop" / "values.yaml").read_text(), "no password on a command line"
    assert set(CULL_ARGS) <= set(config["KubeSpawner"]["args"]), "idle kernels are culled as on one machine"
    single = values["singleuser"]
    assert single["memory"]["limit"] and single["cpu"]["limit"]
    assert single["image"]["name"].endswith("roofline-lessons")
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] > 0
