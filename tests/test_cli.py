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
              "intensity_per_weight_byte", "part_ridge_point", "part_peak_flops_per_s", "step_ridge_point",
              "step_compute_roof_flops_per_s", "bandwidth_bytes_per_s", "attainable_flops_per_s",
              "fraction_of_part_peak", "fraction_of_step_compute_roof", "bound", "time_lower_bound_s",
              "memory_required_bytes", "fits_in_memory"):
        assert k in d, k
    for k in ("ridge_point", "peak_flops_per_s", "fraction_of_peak"):  # names that read as the part's
        assert k not in d, k
    assert d["bound"] == "memory" and d["batch"] == 32 and d["context_tokens"] == 4096
    assert d["part_ridge_point"] == pytest.approx(295.3, rel=1e-3) and d["part_peak_dtype"] == "bf16"
    assert d["step_ridge_point"] == d["part_ridge_point"] and d["step_compute_roof_is_blended"] is False
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
    assert "max_context_tokens" in err and "what-if" in err
    assert sum("max_context_tokens" in w for w in d["warnings"]) == 1  # (its 10M-token cache does not fit either)
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


# ---- issue 25: the part's ridge vs this step's compute roof; serve's second fit; units and wording ----------

B200_W8A8 = ("place", "--hardware", "b200", "--model", "llama-3.1-70b", "--phase", "prefill", "--weights", "fp8",
             "--activations", "fp8", "--compute", "fp8")
H100_INT4 = ("place", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--phase", "decode", "--context", "4096",
             "--weights", "int4")


@pytest.mark.parametrize("args,dtype", [(B200_W8A8, "fp8"), (H100_INT4, "bf16")])
def test_a_blended_compute_roof_is_this_steps_never_the_parts(capsys, args, dtype):
    """W8A8 (FP8 matmuls, BF16 attention) and weight-only int4 (dequant in series) blend their compute roof:
    the text and JSON call that this step's, and give the part's own peak and ridge beside it."""
    import re

    from roofline_lessons import place
    from roofline_lessons.core.hardware import get_part
    from roofline_lessons.core.units import num, percent, si

    code, out, _ = run(capsys, *args, "--json")
    d = json.loads(out)
    part = get_part(d["hardware"])
    peak, bw = part.peak_flops_per_s(dtype), part.memory_bandwidth_bytes_per_s
    assert code == 0 and d["step_compute_roof_is_blended"] is True and d["part_peak_dtype"] == dtype
    assert d["part_peak_flops_per_s"] == peak and d["part_ridge_point"] == pytest.approx(peak / bw)
    assert d["step_compute_roof_flops_per_s"] not in part.dense_flops_per_s.values()  # no rate the part has
    assert d["step_compute_roof_flops_per_s"] < peak
    assert d["fraction_of_part_peak"] == pytest.approx(d["attainable_flops_per_s"] / peak)
    assert d["fraction_of_part_peak"] < d["fraction_of_step_compute_roof"]
    code, text, _ = run(capsys, *args)
    ridge = next(line for line in text.splitlines() if line.startswith("  ridge point"))
    assert f"{num(peak / bw)} FLOP/byte: the part's for {dtype} ({si(peak, 'FLOP/s')} dense" in ridge
    assert num(d["step_ridge_point"]) not in ridge  # the blend is not labelled the part's ridge
    roof = next(line for line in text.splitlines() if line.startswith("  this step's roof"))
    assert si(d["step_compute_roof_flops_per_s"], "FLOP/s") in roof and num(d["step_ridge_point"]) in roof
    assert "not one of the part's rates" in roof
    att = next(line for line in text.splitlines() if line.startswith("  attainable"))
    assert f"{percent(d['fraction_of_step_compute_roof'])} of this step's compute roof" in att
    assert f"{percent(d['fraction_of_part_peak'])} of the part's {dtype} dense peak" in att
    assert not re.search(r"% of peak\b", text)
    if dtype == "bf16":  # int4 on an H100: 19 % of the blend is 1.3 % of the chip
        assert percent(d["fraction_of_part_peak"]) == "1.31 %"


def test_one_format_names_the_parts_peak(capsys):
    from roofline_lessons.core.units import percent

    code, text, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode")
    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                       "--json")
    d = json.loads(out)
    assert "ridge point          295 FLOP/byte: the part's (989 TFLOP/s bf16 dense / 3.35 TB/s)" in text
    assert "this step's roof" not in text
    assert f"{percent(d['fraction_of_part_peak'])} of the part's bf16 dense peak" in text


def test_a_blended_link_ridge_is_named_this_steps(capsys):
    code, text, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--phase", "decode",
                        "--weights", "fp8", "--compute", "fp8", "--tensor-parallel", "2")
    line = next(x for x in text.splitlines() if x.startswith("  interconnect"))
    assert "this step's compute roof ÷ the link" in line and "the part's fp8 peak ÷ the link: 4,398" in line


def test_serve_checks_the_serving_engines_share_of_memory(capsys):
    from roofline_lessons.core.units import binary

    args = ("serve", "--hardware", "h200", "--model", "llama-3.1-70b", "--prompt", "1024", "--output", "1")
    code, out, _ = run(capsys, *args, "--json")
    d = json.loads(out)
    assert code == 0 and d["memory_utilization"] == 0.9 and d["fits_in_memory"] is True
    assert d["usable_memory_bytes"] == pytest.approx(0.9 * 141 * 2**30)
    assert d["fits_in_usable_memory"] is False  # 132 GiB of 141 GiB, but 127 GiB at 0.9
    code, text, _ = run(capsys, *args)
    mem = next(x for x in text.splitlines() if x.startswith("  memory"))
    assert mem.endswith(f"-> fits; in 90 % of it ({binary(0.9 * 141 * 2**30)}) -> does NOT fit")
    code, out, _ = run(capsys, *args, "--memory-utilization", "0.95", "--json")
    assert json.loads(out)["fits_in_usable_memory"] is True
    code, _, err = run(capsys, *args, "--memory-utilization", "1.5")
    assert code == 2 and "memory_utilization" in err


def test_serve_labels_are_spelled_out_and_aligned(capsys):
    code, text, _ = run(capsys, *SERVE, "--price-per-hour", "3", "--speculative-tokens", "2", "--acceptance", "0.5")
    assert "out. token" not in text and "time per output token" in text
    labels = ("speculation", "time to first token", "time per output token", "end to end", "output tokens/s",
              "cost", "memory")
    seen = [line for line in text.splitlines() if line[2:].startswith(labels)]
    assert len(seen) == len(labels)
    for line in seen:  # every label in one column, every value from the same column on
        label = next(lab for lab in labels if line[2:].startswith(lab))
        assert line[:25] == f"  {label:<23}", line


@pytest.mark.parametrize("args", [
    ("place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode", "--weights", "fp8",
     "--compute", "fp8"),
    ("place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode", "--weights", "fp8"),
    ("serve", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--prompt", "1", "--output", "2",
     "--speculative-tokens", "1", "--acceptance", "0.5"),
])
def test_a_unit_agrees_with_its_number(capsys, args):
    import re

    code, text, _ = run(capsys, *args)
    assert code == 0
    assert not re.search(r"(?<![\d.,])1 (bytes|tokens|decode steps|drafted tokens|sends|stages)\b", text), text
    if args[0] == "place":
        assert "at 1 byte each" in text


def test_pipeline_line_adds_up_to_the_steps_estimate(capsys):
    from roofline_lessons.core.units import duration

    args = ("place", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--phase", "decode", "--context", "4096",
            "--pipeline-parallel", "2")
    code, out, _ = run(capsys, *args, "--json")
    d = json.loads(out)
    code, text, _ = run(capsys, *args)
    line = next(x for x in text.splitlines() if x.startswith("  pipeline"))
    other = d["time_estimate_s"] - d["stage_time_s"] - d["pipeline_send_s"]
    assert d["stage_time_s"] < d["time_estimate_s"] / 1.5  # the busiest stage is not the step
    assert (f"the busiest stage (this chip, every figure above) {duration(d['stage_time_s'])} + the other stages "
            f"{duration(other)} + 1 send between stages of {duration(d['pipeline_send_s'])} = "
            f"{duration(d['time_estimate_s'])}, the step's estimate") in line


def test_a_context_warning_says_where_its_count_comes_from(capsys):
    code, out, err = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                         "--context", "300000", "--json")
    assert "context of 300,001 tokens (300,000 cached + 1 this step writes) exceeds" in err
    assert json.loads(out)["warnings"] == [err.strip().split("warning: ", 1)[1]]
    code, out, err = run(capsys, "serve", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--prompt", "131000",
                         "--output", "256")
    assert "context of 131,256 tokens (the 131,000-token prompt + 256 output tokens) exceeds" in err


def test_models_table_says_the_window_caps_per_token_kv(capsys):
    from roofline_lessons.core.models import get_model
    from roofline_lessons.core.units import KiB, binary

    code, out, _ = run(capsys, "models")
    g = get_model("gemma-3-27b")
    row = next(x for x in out.splitlines() if x.startswith("gemma-3-27b"))
    assert "496 KiB before the window caps it (past 1,024 tokens: 80 KiB)" in row
    # the two figures make the capped per-sequence cache: 496 KiB × 1,024 + 80 KiB × (32,768 − 1,024)
    assert binary(496 * KiB * 1024 + 80 * KiB * (32768 - 1024)) == binary(g.kv_cache_bytes_per_sequence(32768))
    assert "before the window caps it" not in next(x for x in out.splitlines() if x.startswith("llama-3.1-8b"))
    assert "gpt-oss-120b" in out and "72 KiB before the window caps it (past 128 tokens: 36 KiB)" in out
    code, out, _ = run(capsys, "models", "--json")
    gj = next(m for m in json.loads(out) if m["id"] == "gemma-3-27b")
    assert gj["sliding_window_tokens"] == 1024 and gj["kv_bytes_per_token_bf16_past_window"] == 80 * KiB


def test_place_states_its_units_and_never_writes_KB(capsys):
    import re

    for args in (("place", "--hardware", "tpu-v5e", "--model", "qwen3.8-27b", "--phase", "prefill", "--prompt", "1"),
                 ("hardware",), ("models",), SERVE):
        code, text, err = run(capsys, *args)
        assert code == 0 and not re.search(r"\bKB\b", text + err)
        if args[0] == "place":
            assert " kB" in text  # SI bytes moved …
            assert "1 kB = 1,000 bytes" in text and "1 GiB = 2^30 bytes" in text  # … and said so


# ---- the second strict reader: setups that do not fit, collectives by kind, help for every flag --------

def test_place_on_a_setup_that_does_not_fit_says_so_on_every_time_and_on_stderr(capsys):
    args = ("place", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--phase", "decode", "--context", "4096")
    code, out, err = run(capsys, *args)
    assert code == 0 and "does NOT fit" in out
    times = [x for x in out.splitlines() if x.startswith(("  time lower bound", "  time estimate"))]
    assert len(times) == 2 and all("(as if it fit: it does not, see memory below)" in x for x in times)
    assert "warning:" in err and "does not fit" in err and "133 GiB" in err and "80 GiB" in err
    code, out, err = run(capsys, *args, "--json")
    assert any("does not fit" in w for w in json.loads(out)["warnings"]) and "does not fit" in err
    code, out, err = run(capsys, *args, "--tensor-parallel", "2")  # it fits two: no mark, no warning
    assert "as if it fit" not in out and err == ""


def test_serve_on_a_setup_that_does_not_fit_says_so_on_every_time_and_on_stderr(capsys):
    args = ("serve", "--hardware", "h100-sxm", "--model", "qwen3-235b-a22b", "--prompt", "1024", "--output", "128",
            "--tensor-parallel", "2", "--price-per-hour", "3")
    code, out, err = run(capsys, *args)
    assert code == 0 and "does NOT fit" in out and "does not fit" in err and "per chip" in err
    for label in ("time to first token", "time per output token", "end to end", "output tokens/s", "cost"):
        line = next(x for x in out.splitlines() if x[2:].startswith(label))
        assert line.endswith("(as if it fit: it does not, see memory below)"), line
    code, out, err = run(capsys, *SERVE)
    assert "as if it fit" not in out and "does not fit" not in err


@pytest.mark.parametrize("split,kinds,absent", [
    (("--expert-parallel", "8"), ["all-to-alls sending each token once per other expert group"], ["all-reduces"]),
    (("--tensor-parallel", "2"), ["all-reduces by the ring", "logits gathered by no chip"], ["all-to-all"]),
    (("--tensor-parallel", "8"), ["all-reduces reduced in the switch (NVLS)"], ["all-to-all"]),
    (("--pipeline-parallel", "2"), ["no collectives in this split"], ["all-reduces", "all-to-all"]),
])
def test_least_collective_traffic_is_labelled_by_the_collectives_the_split_makes(capsys, split, kinds, absent):
    code, out, _ = run(capsys, "place", "--hardware", "h200", "--model", "qwen3-235b-a22b", "--phase", "decode",
                       "--batch", "64", "--context", "4096", *split)
    line = next(x for x in out.splitlines() if "least collective traffic" in x)
    label = line.split("least collective traffic (", 1)[1].rsplit("): ", 1)[0]
    assert code == 0 and all(k in label for k in kinds) and not any(a in label for a in absent), label


def test_every_flag_has_help(capsys):
    """place, serve and doctor: no flag without a help text (--no-flash-attention and doctor --json had none)."""
    import argparse

    from roofline_lessons.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("place", "serve", "doctor", "hardware", "models", "cheatsheet", "export", "exercises"):
        for action in sub.choices[name]._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, (name, action.option_strings)
