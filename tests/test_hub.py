"""The workshop JupyterHub (workshop/jupyterhub_config.py), started for real on free loopback ports
with two learners: the shared password admits only its holders (and only listed names), each learner
gets a server of their own with none of the hub's secrets in its environment and idle kernels culled,
nbgitpuller delivers the course from a scratch copy of this checkout and, after a new commit there,
brings the update while keeping a learner's edit; a kernel imports the course package; the idle
culler runs as a hub service, and nothing listens beyond 127.0.0.1. The config's refusals (root,
plain HTTP beyond loopback, half a TLS pair, bad limits) are checked by loading it in-process.

Needs `make hub` (jupyterhub, jupyterhub-idle-culler, nbgitpuller from PyPI; configurable-http-proxy
from npm into workshop/node_modules). Without them the tests skip locally; with CI=true they fail.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workshop"))
import hubctl  # noqa: E402

IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
PASSWORD = "roofline-workshop-pw"  # test-only: the hub lives on loopback for the length of this module
ADMIN_PASSWORD = "instructor-only-password-for-the-hub-test"
LEARNERS = ("ada", "grace")
LESSON1_PATH = f"{hubctl.TARGET_DIR}/{hubctl.LESSON1}"
EDIT_MARK = "my own note, written during the workshop"
UPSTREAM_MARK = "An update the instructor committed after the first pull."
NEWS_FILE = "workshop-news.md"
SECRET_PREFIXES = ("WORKSHOP_", "CONFIGPROXY_", "JPY_COOKIE")
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
        pytest.skip(message + ". Run `make hub`.")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    _require_hub()
    # always a scratch copy: test_an_update_arrives_and_a_learners_edit_survives commits to it
    return hubctl.course_source(tmp_path_factory.mktemp("course"), copy=True)


@pytest.fixture(scope="module")
def hub(tmp_path_factory, course):
    repo, branch = course
    data = tmp_path_factory.mktemp("hub")
    with hubctl.Hub(data, PASSWORD, cull_every_s=60, spawn_timeout_s=DEADLINE_S,
                    extra_env={"WORKSHOP_COURSE_REPO": repo, "WORKSHOP_COURSE_BRANCH": branch,
                               "WORKSHOP_ADMIN_PASSWORD": ADMIN_PASSWORD, "WORKSHOP_ADMINS": "instructor",
                               "WORKSHOP_LEARNERS": ",".join(LEARNERS)}) as h:
        yield h


@pytest.fixture(scope="module")
def learners(hub, course):
    """Both learners logged in, their servers started and the course pulled once."""
    repo, branch = course
    out = {}
    for name in LEARNERS:
        learner = hubctl.Learner(hub.url, name, timeout_s=DEADLINE_S)
        assert learner.login(PASSWORD), f"{name} was refused with the right password:\n{hub.log_tail()}"
        learner.spawn(timeout_s=DEADLINE_S)
        learner.pull(repo, branch, timeout_s=DEADLINE_S)
        out[name] = learner
    return out


def test_the_hub_refuses_to_start_without_a_password(tmp_path, course):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKSHOP_")}
    env["WORKSHOP_DATA_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-m", "jupyterhub", "-f", str(hubctl.CONFIG)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode != 0
    assert "WORKSHOP_PASSWORD" in done.stdout + done.stderr
    assert not (tmp_path / "jupyterhub.sqlite").exists(), "the hub got as far as creating its database"


def _load_config(monkeypatch, tmp_path, **env) -> str:
    """Run workshop/jupyterhub_config.py in-process, as JupyterHub would, with only ``env`` as WORKSHOP_*
    settings; '' when it loads, else its refusal message."""
    from traitlets.config import Config

    for key in [k for k in os.environ if k.startswith("WORKSHOP_")]:
        monkeypatch.delenv(key)
    for key, value in {"WORKSHOP_PASSWORD": PASSWORD, "WORKSHOP_DATA_DIR": str(tmp_path),
                       "WORKSHOP_COURSE_REPO": "file:///nowhere", "WORKSHOP_COURSE_BRANCH": "main",
                       **({"WORKSHOP_ALLOW_ROOT": "1"} if os.getuid() == 0 else {}), **env}.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    config = Config()
    try:
        runpy.run_path(str(hubctl.CONFIG), init_globals={"get_config": lambda: config})
    except SystemExit as stop:
        return str(stop.code)
    _load_config.last = config
    return ""


@pytest.mark.parametrize("env, refusal", [
    ({"WORKSHOP_IP": "0.0.0.0"}, "refusing plain HTTP on WORKSHOP_IP='0.0.0.0'"),
    ({"WORKSHOP_IP": ""}, "refusing plain HTTP on WORKSHOP_IP=''"),
    ({"WORKSHOP_SSL_CERT": "/etc/hub.crt"}, "set both WORKSHOP_SSL_CERT and WORKSHOP_SSL_KEY"),
    ({"WORKSHOP_IP": "0.0.0.0", "WORKSHOP_SSL_KEY": "/etc/hub.key"}, "got only WORKSHOP_SSL_KEY"),
    ({"WORKSHOP_MEM_LIMIT": "lots"}, "WORKSHOP_MEM_LIMIT='lots' is not a size"),
    ({"WORKSHOP_MEM_LIMIT": "-1G"}, "WORKSHOP_MEM_LIMIT='-1G' is not a size"),
    ({"WORKSHOP_CPU_LIMIT": "one"}, "WORKSHOP_CPU_LIMIT='one' is not a positive number"),
    ({"WORKSHOP_CPU_LIMIT": "0"}, "WORKSHOP_CPU_LIMIT='0' is not a positive number"),
    ({"WORKSHOP_ALLOW_ROOT": None}, "refusing to run as root"),
])
def test_the_config_refuses_unsafe_or_malformed_settings(monkeypatch, tmp_path, course, env, refusal):
    if "WORKSHOP_ALLOW_ROOT" in env and os.getuid() != 0:
        pytest.skip("the root refusal can only be seen when the tests run as root (as CI containers do)")
    message = _load_config(monkeypatch, tmp_path, **env)
    assert refusal in message
    assert "\n" not in message, "a refusal is one line"


def test_the_config_accepts_tls_or_a_tls_proxy_and_keeps_secrets_from_learners(monkeypatch, tmp_path, course):
    assert _load_config(monkeypatch, tmp_path, WORKSHOP_IP="0.0.0.0", WORKSHOP_SSL_CERT="/etc/hub.crt",
                        WORKSHOP_SSL_KEY="/etc/hub.key", WORKSHOP_MEM_LIMIT="1.5G", WORKSHOP_CPU_LIMIT="0.5") == ""
    config = _load_config.last
    assert config.JupyterHub.ssl_cert == "/etc/hub.crt" and config.JupyterHub.ssl_key == "/etc/hub.key"
    assert config.Spawner.mem_limit == "1.5G" and config.Spawner.cpu_limit == 0.5
    assert _load_config(monkeypatch, tmp_path, WORKSHOP_IP="10.0.0.5", WORKSHOP_BEHIND_TLS_PROXY="1") == ""
    spawner = _load_config.last.Spawner
    assert not [k for k in [*spawner.env_keep, *spawner.environment] if k.startswith(SECRET_PREFIXES)]
    assert set(CULL_ARGS) <= set(spawner.args)
    assert "WORKSHOP_PASSWORD" not in os.environ, "the config leaves the password for the hub's children"


def test_a_wrong_password_is_refused(hub):
    assert not hubctl.Learner(hub.url, "mallory").login("not-the-workshop-password")
    assert not hubctl.Learner(hub.url, "mallory").login("")
    # the instructor's name does not open with the learners' password
    assert not hubctl.Learner(hub.url, "instructor").login(PASSWORD)
    r = hubctl.Learner(hub.url, "mallory").api("GET", "/users/mallory")
    assert r.status_code in (401, 403)


def test_a_name_not_in_workshop_learners_is_refused_even_with_the_password(hub):
    assert not hubctl.Learner(hub.url, "mallory").login(PASSWORD)


def test_the_right_password_logs_in_and_spawns_a_server_per_learner(hub, learners):
    trees = hub.learner_processes()
    assert set(LEARNERS) <= set(trees), f"running learner servers: {sorted(trees)}"
    servers = {name: trees[name][0] for name in LEARNERS}
    assert len({p.pid for p in servers.values()}) == len(LEARNERS), "learners share a server process"
    for name, proc in servers.items():
        home = Path(hub.data_dir) / "learners" / name
        assert Path(proc.cwd()) == home, f"{name}'s server runs in {proc.cwd()}, not their own folder {home}"
        model = learners[name].api("GET", f"/users/{name}").json()
        assert model["servers"][""]["ready"] is True
        assert model["admin"] is False
        # none of the hub's secrets reach the learner's server; idle kernels are culled
        leaked = sorted(k for k in proc.environ() if k.startswith(SECRET_PREFIXES))
        assert not leaked, f"{name}'s server inherited {leaked}"
        assert set(CULL_ARGS) <= set(proc.cmdline()), proc.cmdline()


def test_a_learners_kernel_imports_the_course_and_sees_no_secrets(learners):
    ada = learners["ada"]
    kernel = ada.start_kernel(LESSON1_PATH)
    ada.execute(kernel, [
        "import os, numpy, roofline_lessons",
        "assert numpy.ones(3).sum() == 3 and roofline_lessons.__name__ == 'roofline_lessons'",
        (f"leaked = [k for k in os.environ if k.startswith({SECRET_PREFIXES!r})]\n"
         "assert not leaked, leaked"),
    ], timeout_s=DEADLINE_S)
    r = ada.session.delete(f"{ada.server_url}/api/kernels/{kernel}", headers=ada._headers(), timeout=DEADLINE_S)
    assert r.status_code == 204


def test_nbgitpuller_delivers_the_course_to_each_learner(hub, learners):
    for name, learner in learners.items():
        copy = Path(hub.data_dir) / "learners" / name / LESSON1_PATH
        assert copy.exists(), f"{name} has no {LESSON1_PATH}"
        notebook = learner.contents(LESSON1_PATH)["content"]
        cells = hubctl.notebook_code_cells(notebook)
        assert any("roofline_lessons" in code for code in cells)

def test_logging_in_lands_on_the_course_pull_link(hub, course):
    repo, branch = course
    learner = hubctl.Learner(hub.url, "ada")
    assert learner.login(PASSWORD)
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


def test_an_update_arrives_and_a_learners_edit_survives_a_second_pull(hub, learners, course, tmp_path):
    repo, branch = course
    ada, grace = learners["ada"], learners["grace"]
    notebook = ada.contents(LESSON1_PATH)["content"]
    notebook["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": EDIT_MARK})
    ada.save_notebook(LESSON1_PATH, notebook)
    _commit_upstream(repo, branch, tmp_path / "instructor")
    home = Path(hub.data_dir) / "learners" / "ada" / hubctl.TARGET_DIR
    assert not (home / NEWS_FILE).exists()
    events = ada.pull(repo, branch, timeout_s=DEADLINE_S)
    assert events[-1]["phase"] == "finished"
    assert (home / NEWS_FILE).exists(), "the new commit's file did not arrive"
    after = ada.contents(LESSON1_PATH)["content"]
    assert after["cells"][0]["source"] == EDIT_MARK
    assert UPSTREAM_MARK in "".join(after["cells"][-1]["source"]), "the update to lesson 1 was not merged"
    on_disk = json.loads((Path(hub.data_dir) / "learners" / "ada" / LESSON1_PATH).read_text())
    assert "".join(on_disk["cells"][0]["source"]) == EDIT_MARK
    # grace's copy is her own: ada's edit is not in it
    assert EDIT_MARK not in json.dumps(grace.contents(LESSON1_PATH)["content"])


def test_the_idle_culler_is_a_hub_service(hub, learners):
    admin = hubctl.Learner(hub.url, "instructor")
    assert admin.login(ADMIN_PASSWORD)
    services = admin.api("GET", "/services").json()
    assert "idle-culler" in services, f"services: {sorted(services)}"
    culler = services["idle-culler"]
    assert "jupyterhub_idle_culler" in " ".join(culler["command"])
    assert any(r == "idle-culler" for r in culler["roles"])
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


def test_the_kubernetes_values_use_the_same_pull_link_and_enforced_limits():
    """workshop/values.yaml (Zero to JupyterHub): the learners land on the same nbgitpuller link as on
    the one-machine hub, limits and the culler are set, and no password is written in the file."""
    yaml = pytest.importorskip("yaml")
    values = yaml.safe_load((ROOT / "workshop" / "values.yaml").read_text())
    config = values["hub"]["config"]
    public = hubctl.pull_link("https://github.com/ORG/REPO", "main")
    expected = public.replace("ORG", "<org>").replace("REPO", "<repo>")  # placeholders, left readable
    assert config["JupyterHub"]["default_url"] == expected
    assert config["JupyterHub"]["authenticator_class"] == "shared-password"
    assert not config["SharedPasswordAuthenticator"]["user_password"]
    assert "--set-string" not in (ROOT / "workshop" / "values.yaml").read_text(), "no password on a command line"
    assert set(CULL_ARGS) <= set(config["KubeSpawner"]["args"]), "idle kernels are culled as on one machine"
    single = values["singleuser"]
    assert single["memory"]["limit"] and single["cpu"]["limit"]
    assert single["image"]["name"].endswith("roofline-lessons")
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] > 0
