"""A CUDA-graph skip names the line torch gives as its cause: the user's line where torch's
stack reaches it, else the library's line and the user's call into the library; only a
message with no stack falls back to the compiled function's def line."""

from __future__ import annotations

from typing import Any

import pytest

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import Finding
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.model import Trace
from graphdoctor.trace.torch_logs.compile_logs import parse

S = 1_000_000_000
LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"
HF = "/opt/torch/.venv/lib/python3.12/site-packages/transformers"
TORCH = "/opt/torch/.venv/lib/python3.12/site-packages/torch"
HF_SCRIPT = "/work/main/fixtures/scripts/real_hf_static_cache_generate.py"
SCRIPT = "/work/main/fixtures/scripts/compile_mutated_input.py"
DECODE = "/work/main/decode.py"

# torch 2.11.0+cu130's words, as fixtures/recordings/real_hf_static_cache_generate recorded them
HF_SKIP = (
    "skipping cudagraphs due to mutated inputs (12 instances). Found from : \n"
    f'   File "{HF}/utils/generic.py", line 939, in wrapper\n'
    "    output = func(self, *args, **kwargs)\n"
    f'  File "{HF}/models/llama/modeling_llama.py", line 467, in forward\n'
    "    outputs: BaseModelOutputWithPast = self.model(\n"
    f'  File "{HF}/utils/generic.py", line 1068, in wrapper\n'
    "    output = func(self, *args, **kwargs)\n"
    f'  File "{HF}/utils/output_capturing.py", line 286, in wrapper\n'
    "    outputs = func(self, *args, **kwargs)\n"
    f'  File "{HF}/models/llama/modeling_llama.py", line 403, in forward\n'
    "    hidden_states = decoder_layer(\n"
    f'  File "{HF}/modeling_layers.py", line 109, in __call__\n'
    "    return super().__call__(*args, **kwargs)\n"
    f'  File "{HF}/models/llama/modeling_llama.py", line 308, in forward\n'
    "    hidden_states, _ = self.self_attn(\n"
    f'  File "{HF}/models/llama/modeling_llama.py", line 262, in forward\n'
    "    key_states, value_states = past_key_values.update(key_states, value_states, "
    "self.layer_idx)\n"
    f'  File "{HF}/cache_utils.py", line 1397, in update\n'
    "    keys, values = self.layers[layer_idx].update(key_states, value_states, *args, "
    "**kwargs)\n"
    f'  File "{HF}/cache_utils.py", line 478, in update\n'
    "    self.cumulative_length.add_(kv_length)\n")
# and as fixtures/recordings/compile_mutated_input recorded them
USER_SKIP = ("skipping cudagraphs due to mutated inputs (1 instances). Found from : \n"
             f'   File "{SCRIPT}", line 10, in step\n'
             "    counts[0] += 1  # the culprit: in-place write to a tensor the graph does "
             "not own\n")
# torch 2.11.0+cu130 on an H100, for `k_cache[pos] = y @ wk` into a global cache under
# reduce-overhead: no stack at all
BARE_SKIP = "skipping cudagraphs due to mutated inputs (1 instances)"


def _frames(message: str) -> list[tuple[str, int, str]]:
    parsed = parse(LOGGER, message)
    assert parsed is not None
    frames: list[tuple[str, int, str]] = parsed["frames"]
    return frames


def test_the_library_line_is_read_from_torchs_stack() -> None:
    parsed = parse(LOGGER, HF_SKIP)
    assert parsed is not None and parsed["reason"] == "mutated inputs (12 instances)"
    assert len(parsed["frames"]) == 10
    assert parsed["frames"][-1] == (f"{HF}/cache_utils.py", 478, "update")


@pytest.mark.parametrize("message", [
    USER_SKIP,
    "[0/0] " + USER_SKIP,
    USER_SKIP.replace("Found from : ", "Found from:"),
    USER_SKIP.replace("Found from : ", "Found from "),
    USER_SKIP.replace("due to ", "due to skipping cudagraphs due to ", 1),
    USER_SKIP.replace(". Found from : \n", "\n"),  # a bare traceback, no "Found from"
])
def test_the_mutating_line_is_read_from_every_wording(message: str) -> None:
    assert _frames(message) == [(SCRIPT, 10, "step")]
    parsed = parse(LOGGER, message)
    assert parsed is not None and parsed["reason"] == "mutated inputs (1 instances)"


def test_a_message_without_a_stack_gives_no_frames() -> None:
    assert _frames(BARE_SKIP) == []


# -- assembled traces and the finding ---------------------------------------------------------
def _trace(message: str, calls: list[tuple[str, int, str, str]]) -> Trace:
    """A run whose compile and skip were set off from ``calls`` (outermost first)."""
    records: list[list[Any]] = [["hello", {"version": 1, "target": calls[0][0]}]]
    for i, (file, line, name, kind) in enumerate(calls):
        records.append(["frame", i, file, line, name, kind])
    records += [["stack", 0, list(range(len(calls)))],
                ["compile_cb", 1 * S, "compile_start", "DYNAMO", "0/0", 0],
                ["compile_cb", 2 * S, "compile_end", "DYNAMO", "0/0", -1],
                ["log", 3 * S, LOGGER, "WARNING", message, "", 0],
                ["end", {"exit_code": 0}],
                ["run_end", {"exit_code": 0, "reason": "exited", "wall_ns": 4 * S}]]
    return assemble(records)


def _skip(trace: Trace) -> Finding:
    [finding] = [f for f in diagnose(trace).findings if f.name == "cudagraph-skipped"]
    return finding


HF_CALLS = [(HF_SCRIPT, 56, "<module>", "user"), (HF_SCRIPT, 39, "per_token", "user"),
            (HF_SCRIPT, 28, "generate", "user"),
            (f"{TORCH}/utils/_contextlib.py", 124, "decorate_context", "torch"),
            (f"{HF}/generation/utils.py", 2802, "GenerationMixin.generate", "lib"),
            (f"{TORCH}/_dynamo/eval_frame.py", 1024, "compile_wrapper", "torch"),
            (f"{HF}/utils/generic.py", 933, "can_return_tuple.<locals>.wrapper", "lib")]
DECODE_CALLS = [(DECODE, 30, "<module>", "user"),
                (f"{TORCH}/_dynamo/eval_frame.py", 1024, "compile_wrapper", "torch"),
                (DECODE, 14, "decode", "user")]  # the compiled function, at its def line


def test_a_library_mutation_names_the_library_line_and_the_users_call() -> None:
    finding = _skip(_trace(HF_SKIP, HF_CALLS))
    assert finding.location is not None
    assert (finding.location.file, finding.location.line) == (f"{HF}/cache_utils.py", 478)
    assert finding.title.endswith(
        "mutated inputs (12 instances) at cache_utils.py:478, "
        "called from real_hf_static_cache_generate.py:28")
    assert "called from real_hf_static_cache_generate.py:28" in finding.explanation


def test_a_user_mutation_names_the_mutating_line_not_the_def_line() -> None:
    message = BARE_SKIP + (f'. Found from : \n   File "{DECODE}", line 16, in decode\n'
                           "    k_cache[pos] = y @ wk\n")
    finding = _skip(_trace(message, DECODE_CALLS))
    assert finding.location is not None and finding.location.line == 16
    assert finding.title.endswith("at decode.py:16") and "called from" not in finding.title


def test_without_torchs_stack_the_def_line_is_the_fallback() -> None:
    finding = _skip(_trace(BARE_SKIP, DECODE_CALLS))
    assert finding.location is not None and finding.location.line == 14
