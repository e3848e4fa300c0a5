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
MODULE_CALL = frozenset({"_wrapped_call_impl", "_call_impl"})  # nn.Module.__call__'s frames


def torch_step_part(code: CodeType) -> bool:
    """Whether torch's ``code`` is a step's part: a forward, a backward, an optimizer step."""
    if code.co_name in STEP_PARTS:
        return True
    path, name = OPTIMIZER_STEP
    return code.co_name == name and code.co_filename.replace("\\", "/").endswith(path)


def called_by_user_itself(recorder: Recorder, frame: FrameType) -> bool:
    """Whether the function running in ``frame`` was called by the user's own code (not a
    library's), through nothing but nn.Module's ``__call__``."""
    caller = frame.f_back
    while caller is not None and caller.f_code.co_name in MODULE_CALL:
        caller = caller.f_back
    return caller is not None and recorder.stacks.kind(caller.f_code.co_filename) == USER
