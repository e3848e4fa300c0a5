"""Errors of PyTorch, CUDA libraries and NCCL that name their own fix, and that fix.

A capture's first error is often one of a few that PyTorch's users meet again and again,
and whose text already says, or all but says, what to change: an optimizer constructed
without ``capturable=True``, a library that initializes or autotunes on first use, a seed
or a generator the graph cannot replay, a call CUDA forbids while a stream captures, NCCL's
watchdog querying events during a capture. Each row of :data:`KNOWN_ERRORS` is a pattern
over the error's text (and CUDA error name) and the fix for it, with the pattern's named
groups (the optimizer's class) filled in; :func:`known` finds the row of an error.
An error no row matches keeps its rule's own words.

Where each row's text comes from: tests/diagnose/known_error_messages.json (torch 2.11 on
an H200, caused by tests/gpu/scripts/known_errors.py), the committed recordings of
fixtures/, and, for NCCL's watchdog, the message users reported before torch 2.1 flushed
the watchdog's work ahead of a capture (NVIDIA/physicsnemo-sym#47).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphdoctor.trace.model import ErrorLink, Frame


@dataclass(frozen=True)
class KnownError:
    name: str
    pattern: re.Pattern[str]
    what: str  # what went wrong, with the pattern's groups: a title's words
    fix: str  # with the pattern's groups and {op}: the call that raised, where known


OPTIMIZER_NOT_CAPTURABLE = "optimizer-not-capturable"  # a patch is written for this one

KNOWN_ERRORS: tuple[KnownError, ...] = (
    KnownError(
        OPTIMIZER_NOT_CAPTURABLE,
        re.compile(r"graph capture of step\(\) for an instance of (?P<optimizer>\w+) but "
                   r"param_groups' capturable is False"),
        "{optimizer}.step() was captured, but the optimizer was made with capturable=False",
        "Pass capturable=True where the optimizer is made (torch.optim.{optimizer}(params, "
        "..., capturable=True)): its step then keeps its state on the GPU and can be "
        "captured; the warmup steps before the capture stay as they are."),
    KnownError(
        "nccl-watchdog-in-capture",
        # a bounded gap: the text is a stranger's, and an open one could backtrack long
        re.compile(r"watchdog thread terminated with exception:.{0,400}?not permitted when "
                   r"stream is capturing", re.S),
        "NCCL's watchdog thread queried a collective's event while the stream captured",
        "Let eager collectives finish before capturing (torch.cuda.synchronize() before "
        "capture_begin), capture with capture_error_mode=\"thread_local\" so the watchdog's "
        "queries on its own thread are allowed, or use torch 2.1 or newer, which waits for "
        "the watchdog's work before a capture."),
    KnownError(
        "seed-in-capture",
        re.compile(r"set_current_seed can be called during stream capture only if new seed "
                   r"is the same"),
        "a seed was set inside the capture",
        "Seed before the capture (torch.manual_seed outside the captured code): a graph "
        "replays its random numbers with a fresh offset each replay by itself."),
    KnownError(
        "generator-not-registered",
        re.compile(r"CUDA generator not in capture mode"),
        "random numbers came from a CUDA generator the graph was not told of",
        "Register the generator with the graph before capturing "
        "(graph.register_generator_state(gen)), or draw from the default generator."),
    KnownError(
        "cublas-init-in-capture",
        re.compile(r"CUBLAS_STATUS_NOT_INITIALIZED|cublasCreate|CUBLAS_STATUS_ALLOC_FAILED|"
                   r"cublasLt.*workspace", re.I),
        "cuBLAS created its handle or workspace inside the capture",
        "Run the captured step eagerly before capturing (PyTorch's recipe: 3 iterations on "
        "a side stream), so cuBLAS sets up its handle and workspace outside the capture."),
    KnownError(
        "cudnn-in-capture",
        # cuDNN's frontend fails its engine search (FIND) when a capture forbids its trials
        re.compile(r"CUDNN_STATUS|cudnnFind|cudnnCreate|cuDNN error|FIND was unable to find "
                   r"an engine", re.I),
        "cuDNN initialized or autotuned (torch.backends.cudnn.benchmark) inside the capture",
        "Warm up with exactly the shapes the capture uses, so cudnn.benchmark's autotuning "
        "runs eagerly; or set torch.backends.cudnn.benchmark = False for the captured step."),
    KnownError(
        "not-permitted-while-capturing",
        re.compile(r"operation not permitted when stream is capturing"),
        "{op} is not permitted while a stream captures",
        "Move {op} out of the captured code, before the capture or after the replay: CUDA "
        "refuses it while a stream captures."),
)
# torch's own checks that failed: its message asks for a report (cudagraph trees'
# check_memory_pool: "This could be a bug in inductor aliasing tracking ... Please file an
# issue"; an internal assert; dynamo's internal error). A bug in torch, not in the script.
TORCH_BUG = re.compile(r"Please file an issue|please report a bug to PyTorch|"
                       r"could be a bug in inductor|INTERNAL ASSERT FAILED|"
                       r"InternalTorchDynamoError", re.I)


def is_torch_bug(link: ErrorLink) -> bool:
    """Whether an error is one of torch's own checks failing (see :data:`TORCH_BUG`)."""
    return TORCH_BUG.search(f"{link.type}: {link.message}") is not None


GENERIC_OP = "the call that raised"
_WRAPPERS = re.compile(r"(^|\.)(inner|_fn|wrapper|__call__|_wrapped_call_impl|_call_impl)$")


def known(link: ErrorLink, frames: list[Frame]) -> tuple[KnownError, dict[str, str]] | None:
    """The row of the table an error matches, with the words to fill its texts in (the
    pattern's groups, and ``op``: the innermost named call of ``frames``, its stack)."""
    text = f"{link.message}\n{link.cuda_error}"
    for row in KNOWN_ERRORS:
        found = row.pattern.search(text)
        if found:
            words = {k: v for k, v in found.groupdict().items() if v}
            return row, {"op": _op(frames), **words}
    return None


def _op(frames: list[Frame]) -> str:
    """``barrier()``: the innermost frame of a stack that is not a wrapper's."""
    for frame in reversed(frames):
        if frame.func and not _WRAPPERS.search(frame.func) and frame.func != "<module>":
            return f"{frame.func.rsplit('.', 1)[-1]}()"
    return GENERIC_OP


def say(text: str, words: dict[str, str]) -> str:
    """A row's text with the words :func:`known` found for it filled in."""
    return text.format_map(words)
