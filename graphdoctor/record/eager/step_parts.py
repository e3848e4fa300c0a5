"""torch's own functions that are a step's parts, and whether the user's code called them.

PyTorch's recipe captures inline code at a script's top level: ``model(x)`` of an
``nn.Sequential``, ``loss_fn(...)``, ``loss.backward()``, ``opt.step()``. Those calls of
torch are the captured step's parts, and their eager calls (the recipe's warmup loop) its
baseline; but the same code runs for calls the script never made itself (every
``nn.Sequential`` inside a model runs ``Sequential.forward``), so only the calls the user's
own code makes count.
"""

from __future__ import annotations

from types import CodeType, FrameType

from graphdoctor.record.recorder import Recorder
from graphdoctor.record.stacks import USER

# a module's forward (behind nn.Module.__call__), Tensor.backward, and an optimizer's step,
# which runs first as the profiling wrapper torch puts around every optimizer's step
STEP_PARTS = frozenset({"forward", "backward"})
OPTIMIZER_STEP = ("torch/optim/optimizer.py", "wrapper")
# torch.distributed's collectives and point-to-point calls, which a rank's warm-up loop makes
# inline before capturing the same calls: each rank's eager step. Their Python runs first as
# the logging wrapper torch puts around each of them (c10d_logger), else as themselves.
COLLECTIVES = frozenset({
    "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "broadcast", "reduce", "all_to_all", "all_to_all_single",
    "send", "recv", "isend", "irecv", "batch_isend_irecv", "gather", "scatter",
    # newer torch's names for the same (all_gather_into_tensor is deprecated for the first)
    "all_gather_single", "reduce_scatter_single", "all_reduce_coalesced",
    "all_gather_coalesced", "_all_gather_base"})
DISTRIBUTED_FILES = ("torch/distributed/distributed_c10d.py", "torch/distributed/c10d_logger.py")
MODULE_CALL = frozenset({"_wrapped_call_impl", "_call_impl"})  # nn.Module.__call__'s frames


def torch_step_part(code: CodeType) -> bool:
    """Whether torch's ``code`` is a step's part: a forward, a backward, an optimizer step,
    a collective."""
    if code.co_name in STEP_PARTS:
        return True
    path, name = OPTIMIZER_STEP
    file = code.co_filename.replace("\\", "/")
    if code.co_name == name and file.endswith(path):
        return True
    return file.endswith(DISTRIBUTED_FILES) and (code.co_name in COLLECTIVES
                                                  or code.co_name == "wrapper")


def called_by_user_itself(recorder: Recorder, frame: FrameType) -> bool:
    """Whether the function running in ``frame`` was called by the user's own code (not a
    library's), through nothing but nn.Module's ``__call__``."""
    caller = frame.f_back
    while caller is not None and caller.f_code.co_name in MODULE_CALL:
        caller = caller.f_back
    return caller is not None and recorder.stacks.kind(caller.f_code.co_filename) == USER
