"""The workshop JupyterHub (workshop/jupyterhub_config.py), started for real on free loopback ports
with two learners: the shared password admits only its holders, each learner gets a server of their
own, nbgitpuller delivers the course from this checkout and keeps a learner's edit across a re-pull,
the idle culler runs as a hub service, and nothing listens beyond 127.0.0.1.

Needs `make hub` (jupyterhub, jupyterhub-idle-culler, nbgitpuller from PyPI; configurable-http-proxy
from npm into workshop/node_modules). Without them the tests skip locally; with CI=true they fail.
"""

from __future__ import annotations

import json
import os
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
    return hubctl.course_source(tmp_path_factory.mktemp("course"))


@pytest.fixture(scope="module")
def hub(tmp_path_factory, course):
    repo, branch = course
    data = tmp_path_factory.mktemp("hub")
    with hubctl.Hub(data, PASSWORD, cull_every_s=60, spawn_timeout_s=60,
                    extra_env={"WORKSHOP_COURSE_REPO": repo, "WORKSHOP_COURSE_BRANCH": branch,
                               "WORKSHOP_ADMIN_PASSWORD": ADMIN_PASSWORD, "WORKSHOP_ADMINS": "instructor"}) as h:
        yield h


@pytest.fixture(scope="module")
def learners(hub, course):
    """Both learners logged in, their servers started and the course pulled once."""
    repo, branch = course
    out = {}
    for name in LEARNERS:
        learner = hubctl.Learner(hub.url, name)
        assert learner.login(PASSWORD), f"{name} was refused with the right password:\n{hub.log_tail()}"
        learner.spawn(timeout_s=60)
        learner.pull(repo, branch, timeout_s=60)
        out[name] = learner
    return out


def test_the_hub_refuses_to_start_without_a_password(tmp_path, course):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKSHOP_")}
    env["WORKSHOP_DATA_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-m", "jupyterhub", "-f", str(hubctl.CONFIG)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "WORKSHOP_PASSWORD" in done.stdout + done.stderr
    assert not (tmp_path / "jupyterhub.sqlite").exists(), "the hub got as far as creating its database"


def test_a_wrong_password_is_refused(hub):
    assert not hubctl.Learner(hub.url, "mallory").login("not-the-workshop-password")
    assert not hubctl.Learner(hub.url, "mallory").login("")
    # the instructor's name does not open with the learners' password
    assert not hubctl.Learner(hub.url, "instructor").login(PASSWORD)
    r = hubctl.Learner(hub.url, "mallory").api("GET", "/users/mallory")
    assert r.status_code in (401, 403)


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


def test_a_learners_edit_survives_a_second_pull(hub, learners, course):
    repo, branch = course
    ada, grace = learners["ada"], learners["grace"]
    notebook = ada.contents(LESSON1_PATH)["content"]
    notebook["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": EDIT_MARK})
    ada.save_notebook(LESSON1_PATH, notebook)
    events = ada.pull(repo, branch, timeout_s=60)
    assert events[-1]["phase"] == "finished"
    after = ada.contents(LESSON1_PATH)["content"]
    assert after["cells"][0]["source"] == EDIT_MARK
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
    single = values["singleuser"]
    assert single["memory"]["limit"] and single["cpu"]["limit"]
    assert single["image"]["name"].endswith("roofline-lessons")
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] > 0
