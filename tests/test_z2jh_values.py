"""workshop/values.yaml against the Zero to JupyterHub chart's own values schema.

tests/data/z2jh-values.schema.yaml is the chart's ``jupyterhub/values.schema.yaml`` (its header
names the commit). helm validates the MERGE of the chart's default values.yaml and the user's
files, so the schema's ``required`` lists (``hub.baseUrl``, ``ingress``, ``rbac``, ...) are met by
the defaults, not by a user's file. The chart's default values.yaml at the schema's commit was not
available (the copy found is a 0.10-era file with a top-level ``auth:`` that this schema rejects),
so the merge cannot be rebuilt here. Instead a copy of the schema drops the ``required`` lists the
defaults meet (those on the fixed-name objects reached through ``properties``, ``if/then/else``)
and keeps every other rule: closed objects (``additionalProperties: false``), types, enums, and the
``required`` lists of entries the user names (``hub.extraFiles.<key>``, ``prePuller.extraImages.
<key>``), which no default supplies. A test below checks that the only rule this relaxes for
values.yaml is ``required``. (helm also deletes a key set to null before validating; values.yaml
sets none.)
"""

import copy
import functools
import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[1]

SCHEMA_PATH = ROOT / "tests" / "data" / "z2jh-values.schema.yaml"
VALUES_PATH = ROOT / "workshop" / "values.yaml"
HEADER_END = "# ---- end of header ----\n"
SCHEMA_CHARS = 124_796  # the length of the chart's file as the index that served it reports
CULL_ARGS = ["--MappingKernelManager.cull_idle_timeout=1200", "--MappingKernelManager.cull_interval=120"]
PER_LEARNER_AUTHENTICATORS = {
    "firstuse", "firstuseauthenticator", "firstuseauthenticator.FirstUseAuthenticator",
    "native", "nativeauthenticator", "nativeauthenticator.NativeAuthenticator",
}
SHARED_OR_OPEN = {"shared-password", "dummy", "null", "tmp"}


@functools.lru_cache(maxsize=1)
def _parsed_schema() -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # safe_load's loader, in C where built
    return yaml.load(SCHEMA_PATH.read_text(encoding="utf-8"), Loader=loader)


def _load_schema() -> dict:
    return copy.deepcopy(_parsed_schema())  # 125 kB of YAML: parsed once, a fresh copy per use


def _load_values() -> dict:
    return yaml.safe_load(VALUES_PATH.read_text(encoding="utf-8"))


def _without_default_supplied_required(schema):
    """The schema as it applies to a user's file that helm merges over the chart's defaults.

    Drops ``required`` on objects reached by fixed names (``properties``, and the ``if/then/else``
    at the same place): the chart's own values.yaml supplies those keys, and the chart validates
    that file against this schema. Anything under ``patternProperties``, ``additionalProperties``
    or ``items`` is an entry the user names or lists; it is kept whole, ``required`` included, as
    are ``allOf/anyOf/oneOf`` branches (a branch's ``required`` is a choice, not a missing default).
    """
    if not isinstance(schema, dict):
        return schema
    relaxed = {}
    for key, sub in schema.items():
        if key == "required":
            continue
        if key == "properties":
            relaxed[key] = {name: _without_default_supplied_required(s) for name, s in sub.items()}
        elif key in ("if", "then", "else"):
            relaxed[key] = _without_default_supplied_required(sub)
        else:
            relaxed[key] = copy.deepcopy(sub)
    return relaxed


def _validator(schema=None):
    schema = _without_default_supplied_required(_load_schema()) if schema is None else schema
    return jsonschema.Draft7Validator(schema)


def _errors(values, schema=None) -> list[str]:
    found = sorted(_validator(schema).iter_errors(values), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(map(str, e.absolute_path)) or '<top>'}: {e.message}" for e in found]


def _walk(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield path + (str(key),), value
            yield from _walk(value, path + (str(key),))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, path + (str(i),))


def test_the_schema_is_the_chart_authors_file_unchanged_below_its_header():
    text = SCHEMA_PATH.read_text(encoding="utf-8")
    header, sep, body = text.partition(HEADER_END)
    assert sep, "the header ends with its marker line"
    assert all(line.startswith("#") for line in header.splitlines()), "the header is YAML comments only"
    for needed in ("jupyterhub/zero-to-jupyterhub-k8s", "jupyterhub/values.schema.yaml",
                   "02dd73df01bdbb6d602fed21b0be12565ab38080", "2026-12-02", "chart version"):
        assert needed in header, needed
    assert len(body) == SCHEMA_CHARS, "the chart's file is kept whole and unedited below the header"
    assert body.startswith("# This schema (a jsonschema in YAML format)") and body.endswith("reveal.\n")
    schema = _load_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["additionalProperties"] is False and schema["properties"]["hub"]["properties"]["config"][
        "additionalProperties"] is True, "closed at the top, open under hub.config (traitlets config)"


def test_the_values_file_passes_the_chart_schema():
    errors = _errors(_load_values())
    assert not errors, "\n".join(errors)


def test_relaxing_the_schema_hides_only_the_required_keys_the_defaults_supply():
    """Against the unmodified schema the partial file fails only on `required`, nothing else."""
    found = list(_validator(_load_schema()).iter_errors(_load_values()))
    assert found, "the unmodified schema does demand the keys the chart's defaults supply"
    assert {e.validator for e in found} == {"required"}, [e.message for e in found]


@pytest.mark.parametrize("mistake, expected", [
    (lambda v: v["singleuser"].__setitem__("memroy", {"limit": "1G"}), "singleuser"),  # misspelt key
    (lambda v: v.__setitem__("singleusers", {}), "<top>"),  # misspelt top-level key
    (lambda v: v["singleuser"]["cpu"].__setitem__("limit", "one core"), "singleuser.cpu.limit"),  # type
    (lambda v: v["singleuser"]["memory"].__setitem__("limt", "1G"), "singleuser.memory"),
    (lambda v: v["cull"].__setitem__("timeout", "1h"), "cull.timeout"),
    (lambda v: v["proxy"]["https"].__setitem__("type", "letsencrpyt"), "proxy.https.type"),  # enum
    (lambda v: v["singleuser"]["storage"].__setitem__("type", "nfs"), "singleuser.storage.type"),
    # entries the user names keep their own `required`: no default fills them in
    (lambda v: v.__setitem__("prePuller", {"extraImages": {"course": {"name": "x"}}}),
     "prePuller.extraImages.course"),
    (lambda v: v["hub"].__setitem__("extraFiles", {"f": {"mountPath": "/a"}}), "hub.extraFiles.f"),
])
def test_a_mistake_in_the_values_fails_validation(mistake, expected):
    values = _load_values()
    mistake(values)
    errors = _errors(values)
    assert any(e.startswith(expected + ":") for e in errors), errors


def test_no_password_or_other_secret_is_written_in_the_values():
    values = _load_values()
    config = values["hub"]["config"]
    assert "SharedPasswordAuthenticator" not in config and "DummyAuthenticator" not in config
    secretish = re.compile(r"password|secret|token|passphrase|api_?key", re.IGNORECASE)
    for path, value in _walk(values):
        if secretish.search(path[-1]):
            # a setting ABOUT passwords (min_password_length) or a path to the hash file is fine
            assert not isinstance(value, (str, bytes)) or path[-1] == "dbm_path", (".".join(path), value)
            assert path[-1] not in ("password", "user_password", "admin_password"), ".".join(path)
    assert "cookieSecret" not in values["hub"] and "secretToken" not in values.get("proxy", {})


def test_each_learner_logs_in_with_their_own_password_from_an_allow_list():
    config = _load_values()["hub"]["config"]
    authenticator = config["JupyterHub"]["authenticator_class"]
    assert authenticator in PER_LEARNER_AUTHENTICATORS and authenticator not in SHARED_OR_OPEN
    auth = config["Authenticator"]
    # FirstUseAuthenticator lets ANY name in when allowed_users is empty (its allow_all default)
    assert auth.get("allow_all") in (None, False), "no allow-all: only listed names get in"
    assert isinstance(auth["allowed_users"], list) and auth["allowed_users"], "a non-empty allow-list"
    assert all(isinstance(name, str) and name for name in auth["allowed_users"])
    assert isinstance(auth["admin_users"], list) and len(auth["admin_users"]) >= 1, "the instructor"
    assert not set(auth["admin_users"]) & set(auth["allowed_users"]), "the instructor is not a learner"
    if authenticator.startswith("firstuse"):
        assert config["FirstUseAuthenticator"]["min_password_length"] >= 12, "as on the one-machine hub"
        header = VALUES_PATH.read_text(encoding="utf-8").split("\nhub:")[0]
        assert "before anyone else" in header and "admin" in header, "the instructor claims it first"
    pattern = re.compile(auth["username_pattern"])
    assert pattern.fullmatch("alice") and not pattern.fullmatch("<learner-1>"), "a placeholder stops the hub"


def test_the_pull_link_and_idle_kernel_culling_are_kept():
    config = _load_values()["hub"]["config"]
    url = config["JupyterHub"]["default_url"]
    assert url.startswith("/hub/user-redirect/git-pull?repo=https%3A%2F%2Fgithub.com%2F")
    assert "targetpath=roofline-lessons" in url and "01_the_concept.ipynb" in url
    assert set(CULL_ARGS) <= set(config["KubeSpawner"]["args"])


def test_memory_and_cpu_limits_and_the_culler_are_set():
    values = _load_values()
    single = values["singleuser"]
    assert single["memory"]["limit"] and single["memory"]["guarantee"]
    assert single["cpu"]["limit"] and single["cpu"]["guarantee"]
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] > 0
