"""The workshop hub's rules that need no hub, no root and no cgroups (workshop/workshop_hub.py): the
password rules, the secrets file, the login throttle, sizes and the checks on shared paths. They run
everywhere; tests/test_hub.py runs the hub itself."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workshop"))
import workshop_hub as wh  # noqa: E402


@pytest.mark.parametrize("password, why", [
    ("short-pw", "at least 12"),
    ("            ", "different characters"),
    ("aaaaaaaaaaaaaaaa", "different characters"),
    ("pässwort-genug-lang", "printable ASCII"),
    ("tab\there-long-enough", "printable ASCII"),
    ("x" * 60 + "abcdefghijklmno", "at most 72"),
    (12345678901234, "must be text"),
    (None, "must be text"),
])
def test_weak_or_odd_passwords_are_refused_with_the_reason(password, why):
    with pytest.raises(wh.WorkshopConfigError, match=why):
        wh.check_password(password, "admin_password")


def test_a_good_password_passes():
    assert wh.check_password("correct horse battery", "x") == "correct horse battery"


def test_the_secrets_file_must_be_private(tmp_path):
    path = wh.write_secrets(tmp_path / "secrets.toml", {"admin_password": "instructor-password-1"})
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert wh.load_secrets(path) == {"admin_password": "instructor-password-1"}
    os.chmod(path, 0o640)
    with pytest.raises(wh.WorkshopConfigError, match="readable or writable by others"):
        wh.load_secrets(path)
    os.chmod(path, 0o600)
    path.write_text('admin_password = "instructor-password-1"\nmystery = "value-value-value"\n')
    with pytest.raises(wh.WorkshopConfigError, match="unknown keys"):
        wh.load_secrets(path)
    with pytest.raises(wh.WorkshopConfigError, match="no secrets file"):
        wh.load_secrets(tmp_path / "absent.toml")


def test_writing_secrets_never_leaves_a_half_written_file(tmp_path):
    path = wh.write_secrets(tmp_path / "s.toml", {"admin_password": "first-password-1"})
    with pytest.raises(wh.WorkshopConfigError):
        wh.write_secrets(path, {"admin_password": "short"})
    assert wh.load_secrets(path) == {"admin_password": "first-password-1"}
    assert [p.name for p in tmp_path.iterdir()] == ["s.toml"]


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_the_throttle_locks_a_name_after_repeated_failures_and_lets_it_go():
    clock = Clock()
    t = wh.LoginThrottle(max_failures=3, window_s=60, lockout_s=30, clock=clock)
    for _ in range(2):
        t.failed("name:grace", "address:10.0.0.7")
    assert t.wait_s("name:grace") == 0
    t.failed("name:grace", "address:10.0.0.7")
    assert t.wait_s("name:grace") == pytest.approx(30)
    assert t.wait_s("name:ada", "address:10.0.0.7") == pytest.approx(30), "the address is locked too"
    assert t.wait_s("name:ada", "address:10.0.0.8") == 0
    clock.now += 31
    assert t.wait_s("name:grace", "address:10.0.0.7") == 0
    t.failed("name:grace")
    t.succeeded("name:grace")
    assert t.wait_s("name:grace") == 0


def test_failures_outside_the_window_do_not_count():
    clock = Clock()
    t = wh.LoginThrottle(max_failures=3, window_s=60, lockout_s=30, clock=clock)
    for _ in range(2):
        t.failed("name:grace")
    clock.now += 61
    t.failed("name:grace")
    assert t.wait_s("name:grace") == 0


def test_sizes_are_binary_and_bad_ones_are_named():
    assert wh.parse_size_bytes("2G") == 2 * 2**30
    assert wh.parse_size_bytes("512M") == 512 * 2**20
    assert wh.parse_size_bytes("1000") == 1000
    with pytest.raises(wh.WorkshopConfigError, match="'lots' is not a size"):
        wh.parse_size_bytes("lots")


def test_learner_names_must_make_valid_accounts():
    assert wh.check_learner_names(["ada", "grace_h", "a-1"]) == ["ada", "grace_h", "a-1"]
    for bad in (["Ada"], ["1ada"], ["root!"], ["x" * 24], ["../etc"]):
        with pytest.raises(wh.WorkshopConfigError, match="not allowed"):
            wh.check_learner_names(bad)
    assert len(wh.account_name("x" * 23)) <= 32


def test_an_account_is_made_only_for_a_listed_name(tmp_path):
    with pytest.raises(PermissionError, match="allow-list"):
        wh.ensure_account("mallory", tmp_path, allowed={"ada"})
    with pytest.raises(PermissionError, match="allow-list"):
        wh.ensure_account("Root", tmp_path, allowed={"Root"})


def test_a_group_writable_or_foreign_path_is_reported(tmp_path):
    if os.getuid() != 0:
        pytest.skip("ownership checks need root to create root-owned files")
    shared = tmp_path / "env"
    shared.mkdir()
    os.chmod(shared, 0o755)
    assert wh.writable_by_learners(shared) is None
    (shared / "site.py").write_text("")
    os.chmod(shared / "site.py", 0o666)
    assert "site.py" in wh.writable_by_learners(shared)
    os.chmod(shared / "site.py", 0o644)
    os.chown(shared / "site.py", 65534, 65534)
    assert "owner uid 65534" in wh.writable_by_learners(shared)


def test_a_path_others_cannot_traverse_is_reported(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    os.chmod(private, 0o700)
    (private / "python").write_text("")
    assert "not searchable" in wh.readable_by_learners(private / "python")


def test_the_git_config_names_only_a_local_course_source(tmp_path):
    text = wh.write_git_config(tmp_path / "gitconfig", "file:///srv/course.git").read_text()
    assert "directory = /srv/course.git" in text
    assert "[safe]" not in wh.write_git_config(tmp_path / "g2", "https://example.org/course.git").read_text()
    assert oct((tmp_path / "gitconfig").stat().st_mode & 0o777) == "0o644"


def test_the_throttle_defaults_are_the_documented_ones(monkeypatch):
    for key in ("WORKSHOP_LOGIN_MAX_FAILURES", "WORKSHOP_LOGIN_WINDOW_S", "WORKSHOP_LOGIN_LOCKOUT_S"):
        monkeypatch.delenv(key, raising=False)
    t = wh._throttle_from_env()
    assert (t.max_failures, t.window_s, t.lockout_s) == (5, 300, 60)


class _Request:
    def __init__(self, headers, peer=("127.0.0.1", 5555)):
        self.headers = headers
        self.connection = type("C", (), {"context": type("X", (), {"address": peer})()})()


class _Handler:
    def __init__(self, headers, peer=("127.0.0.1", 5555)):
        self.request = _Request(headers, peer)


def test_the_client_address_ignores_what_a_client_can_set():
    # the proxy appended the real client after a forged entry; X-Real-Ip is ignored
    h = _Handler({"X-Forwarded-For": "10.9.9.9, 203.0.113.5, 127.0.0.1", "X-Real-Ip": "10.1.1.1"})
    assert wh.client_address(h) == "203.0.113.5"
    assert wh.client_address(_Handler({"X-Real-Ip": "10.1.1.1"})) == "127.0.0.1"
    assert wh.client_address(_Handler({}, peer=("198.51.100.7", 1))) == "198.51.100.7"
