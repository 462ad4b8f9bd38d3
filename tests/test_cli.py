import json
import os
import shutil
import subprocess
import sys

import pytest

from roofline_lessons.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_hardware_and_models_tables(capsys):
    code, out, _ = run(capsys, "hardware")
    assert code == 0 and "h100-sxm" in out and "295 FLOP/B" in out
    code, out, _ = run(capsys, "models")
    assert code == 0 and "qwen3.8-27b" in out and "64 KiB" in out


def test_place_json(capsys):
    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode",
                       "--batch", "32", "--context", "4096", "--json")
    assert code == 0
    d = json.loads(out)
    for k in ("flops", "bytes", "weight_bytes", "kv_bytes", "state_bytes", "activation_bytes", "intensity",
              "intensity_per_weight_byte", "ridge_point", "peak_flops_per_s", "bandwidth_bytes_per_s",
              "attainable_flops_per_s", "fraction_of_peak", "bound", "time_lower_bound_s",
              "memory_required_bytes", "fits_in_memory"):
        assert k in d, k
    assert d["bound"] == "memory" and d["batch"] == 32 and d["context_tokens"] == 4096
    assert d["ridge_point"] == pytest.approx(295.3, rel=1e-3)
    assert all({"name", "flops", "bytes", "intensity"} <= set(op) for op in d["ops"])
    assert d["state_bytes"] > 0 and d["kv_bytes"] > 0


def test_place_prefill_and_flags(capsys):
    code, out, _ = run(capsys, "place", "--hardware", "b200", "--model", "llama-3.1-8b", "--phase", "prefill",
                       "--prompt", "2048", "--weights", "fp8", "--compute", "fp8", "--no-flash-attention", "--json")
    off = json.loads(out)
    assert code == 0 and off["flash_attention"] is False and off["matmul_peak_flops_per_s"] == 4500e12
    assert off["attention_peak_flops_per_s"] == 2250e12  # W8A8: attention stays BF16
    code, out, _ = run(capsys, "place", "--hardware", "b200", "--model", "llama-3.1-8b", "--phase", "prefill",
                       "--prompt", "2048", "--weights", "fp8", "--compute", "fp8", "--json")
    on = json.loads(out)
    assert on["bound"] == "compute" and on["flash_attention"] is True
    assert off["intensity"] < on["intensity"]  # the unfused score matrix costs bytes
    assert off["flops"] > on["flops"]  # an eager kernel computes the whole score square
    assert off["time_estimate_per_op_sum_s"] > off["time_lower_bound_s"]
    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode")
    assert code == 0 and "memory-bound" in out


BAD = [
    (["--hardware", "h100", "--model", "qwen3.8-27b", "--phase", "decode"], "h100-sxm"),
    (["--hardware", "h100-sxm", "--model", "qwen-27b", "--phase", "decode"], "qwen3.8-27b"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode", "--batch", "0"], "batch"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode", "--batch", "2.5"], "batch"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "prefill", "--prompt", "0"], "prompt"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "prefill", "--prompt", "ten"], "prompt"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode", "--context", "-5"], "context"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode", "--context", "1e3"], "context"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode", "--kv", "fp6"], "fp6"),
    (["--hardware", "a100-80gb", "--model", "qwen3.8-27b", "--phase", "decode", "--compute", "fp8", "--weights",
      "fp8"], "no fp8"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode", "--compute", "fp8"], "W8A8"),
    (["--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "warmup"], "phase"),
]


@pytest.mark.parametrize("args,needle", BAD)
def test_bad_input_is_one_line_and_exit_2(capsys, args, needle):
    code, out, err = run(capsys, "place", *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_console_script_is_installed_and_fails_cleanly():
    exe = shutil.which("roofline-lessons", path=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    assert exe, "the roofline-lessons console script is not installed"
    r = subprocess.run([exe, "place", "--hardware", "h10", "--model", "llama-2-7b", "--phase", "decode"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("roofline-lessons: error: unknown hardware id 'h10'")
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_context_beyond_the_model_is_a_warning_not_an_error(capsys):
    code, out, err = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                         "--context", "10000000", "--json")
    d = json.loads(out)
    assert code == 0 and d["context_beyond_model"] is True and d["max_context_tokens"] == 131072
    assert "max_context_tokens" in err and "what-if" in err and len(d["warnings"]) == 1
    code, out, err = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                         "--context", "4096", "--json")
    assert json.loads(out)["context_beyond_model"] is False and err == ""


def test_memory_is_reported_in_gib_with_and_without_headroom(capsys):
    code, out, _ = run(capsys, "place", "--hardware", "h200", "--model", "llama-3.1-70b", "--phase", "decode",
                       "--json")
    d = json.loads(out)
    assert d["memory_capacity_bytes"] == 141 * 2**30
    assert d["fits_in_memory"] is True and d["memory_utilization"] == 0.9
    assert d["fits_in_usable_memory"] is False  # 131 GiB of weights > 0.9 × 141 GiB
    code, out, _ = run(capsys, "place", "--hardware", "h200", "--model", "llama-3.1-70b", "--phase", "decode")
    assert "GiB" in out and "does NOT fit" in out
    code, _, err = run(capsys, "place", "--hardware", "h200", "--model", "llama-3.1-70b", "--phase", "decode",
                       "--memory-utilization", "1.5")
    assert code == 2 and "memory_utilization" in err


def test_text_output_shows_the_bound_and_the_estimate_with_its_conventions(capsys):
    from roofline_lessons import place
    from roofline_lessons.core.units import duration

    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "prefill",
                       "--no-flash-attention")
    p = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=8192, flash_attention=False)
    assert code == 0
    assert f"time lower bound     {duration(p.time_lower_bound_s)}" in out and "is faster" in out
    assert f"time estimate        {duration(p.time_estimate_s)}" in out
    assert "operators unfused" in out and "as a kernel per operator" in out
    assert "time bound" not in out.split("top operators")[1]  # the per-operator table is the unfused view


def test_collective_latency_moves_the_estimate_and_never_the_bound(capsys):
    import json

    base = ("place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode", "--tensor-parallel", "8",
            "--json")
    figures = []
    for latency in ("0", "1e-5", "5e-5"):
        code, out, _ = run(capsys, *base, "--collective-latency", latency)
        assert code == 0
        d = json.loads(out)
        assert d["collective_latency_s"] == float(latency)
        figures.append((d["time_lower_bound_s"], d["time_estimate_s"]))
    assert len({b for b, _ in figures}) == 1
    assert figures[0][1] < figures[1][1] < figures[2][1]
    code, _, err = run(capsys, *base, "--collective-latency", "-1")
    assert code == 2 and "--collective-latency must be a number of seconds >= 0" in err


SERVE = ("serve", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--prompt", "1024", "--output", "256")


def test_serve_text_has_no_scientific_notation(capsys):
    import re

    code, out, _ = run(capsys, *SERVE, "--batch", "32", "--speculative-tokens", "3", "--acceptance", "0.6",
                       "--price-per-hour", "2.5")
    assert code == 0 and "time to first token" in out and "per chip" in out and "US dollars per million" in out
    assert not re.search(r"\d[eE][+-]?\d", out)


def test_serve_json(capsys):
    from roofline_lessons.topics.serving import request_timeline

    code, out, _ = run(capsys, *SERVE, "--batch", "32", "--price-per-hour", "3.6", "--json")
    d = json.loads(out)
    assert code == 0
    for k in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s_static_batch", "output_tokens_per_s_per_sequence",
              "tokens_per_verify_step", "fits_in_memory", "memory_required_bytes", "ttft_lower_bound_s",
              "tpot_lower_bound_s", "e2e_lower_bound_s", "output_tokens_per_s_upper_bound",
              "cost_per_million_output_tokens_lower_bound"):
        assert k in d, k
    for k in ("decode_steps", "batch", "prompt_tokens", "output_tokens", "memory_required_bytes"):
        assert type(d[k]) is int, k
    t = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=1024, output_tokens=256, batch=32)
    assert d["decode_steps"] == 255 and d["tpot_s"] == pytest.approx(t.tpot_s)
    assert d["cost_per_million_output_tokens"] == pytest.approx(1e3 / t.output_tokens_per_s)
    assert d["cost_per_million_output_tokens_lower_bound"] == pytest.approx(1e3 / t.output_tokens_per_s_upper_bound)
    assert d["output_tokens_per_s_upper_bound"] > d["output_tokens_per_s_static_batch"]
    code, out, _ = run(capsys, *SERVE, "--json")
    assert json.loads(out)["cost_per_million_output_tokens"] is None


@pytest.mark.parametrize("extra", [("--speculative-tokens", "2", "--acceptance", "1"), ("--acceptance", "-0.5"),
                                   ("--output", "0"), ("--prefix-cached", "-1"), ("--prefix-cached", "1024"),
                                   ("--speculative-tokens", "2", "--acceptance", "0.5", "--draft-model",
                                    "llama-3.1-70b"), ("--chunk", "0"), ("--price-per-hour", "-1")])
def test_serve_bad_input_exits_2(capsys, extra):
    code, out, err = run(capsys, *SERVE, *extra)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "error" in err


def test_readme_console_examples_are_what_the_cli_prints(capsys):
    """Every ```console block of the README that runs roofline-lessons shows exactly what it prints today."""
    import re
    import shlex
    from pathlib import Path

    from roofline_lessons.cli import main as cli_main

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```console\n\$ roofline-lessons ([^\n]+)\n(.*?)```", readme, flags=re.S)
    assert blocks, "the README shows no CLI example"
    for args, shown in blocks:
        capsys.readouterr()
        assert cli_main(shlex.split(args)) == 0
        assert capsys.readouterr().out == shown, f"README example out of date: roofline-lessons {args}"


def test_model_config_declaring_fp8_weights_gets_a_note(capsys):
    """A checkpoint that ships fp8 weights is placed in BF16 unless --weights says otherwise: the CLI says so once."""
    from pathlib import Path

    cfg = Path(__file__).resolve().parent / "data" / "hf_configs" / "deepseek-ai--DeepSeek-V3" / "config.json"
    assert main(["place", "--hardware", "h200", "--model-config", str(cfg), "--phase", "decode", "--json"]) == 0
    err = capsys.readouterr().err
    assert err.count("note:") == 1 and "--weights fp8" in err
    assert main(["place", "--hardware", "h200", "--model-config", str(cfg), "--phase", "decode", "--weights", "fp8",
                 "--json"]) == 0
    assert "note:" not in capsys.readouterr().err
