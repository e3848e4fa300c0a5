"""The words that cross from the recorder to every reader, each named once.

What a recording ran, a graph's status, the API it was made with, a timed call's mode, a
followed function's kind, where an exception was seen, the kinds of compile event, and the
sync kind of torch's own syncs: the recorder writes these strings into the spool, and the
rules, reports and screens compare against them. Torch-free, so the readers import them
without torch.
"""

from __future__ import annotations

# What a recording ran: a script's path or a module (graphdoctor run), a block of code in
# the caller's own process (graphdoctor.check, graphdoctor.recording), or a process the
# script started.
RECORDING_NOTE = "recording"  # what the notes about the recording itself name
RECORDING_STOPPED = "recording stopped"  # the note of a spool that could not be written
PATH_TARGET = "path"
MODULE_TARGET = "module"
IN_PROCESS_TARGET = "in-process"
CHILD_TARGET = "child"  # a Python process the script started, followed (record/processes/follow.py)

# A graph's status at the end of its capture.
CAPTURED = "captured"
CAPTURE_FAILED = "failed"
STILL_CAPTURING = "capturing"  # the run ended inside the capture

# The API a graph was made through.
GRAPH_CONTEXT = "torch.cuda.graph"
CUDA_GRAPH = "CUDAGraph"
GRAPHED_CALLABLES = "make_graphed_callables"
COMPILED = "torch.compile"
MANUAL_APIS = (GRAPH_CONTEXT, CUDA_GRAPH)  # the user's own code holds the captured block

# A timed call's mode: eager before or without graphs, or a compiled function's call that
# warmed up, recorded a graph, replayed one, or ran without one (cudagraphs skipped).
EAGER_CALL = "eager"
WARMUP_CALL = "warmup"
RECORDING_CALL = "record"
REPLAYING_CALL = "replay"
SKIPPED_CALL = "skipped"

# A followed function's kind.
CAPTURED_FUNCTION = "captured"  # a callee of a manual capture
COMPILED_FUNCTION = "compiled"
GRAPHED_FUNCTION = "graphed"
STEP_FUNCTION = "step"  # a user function whose calls replay a graph, timed before it existed too

# What a manual graph's eager figures are calls of: the functions its capture ran, one user
# function that makes every call the capture made (an inline captured block), or the step
# function that replays it, timed before the graph existed and with it.
CALLEES_BASIS = "callees"
COVERING_BASIS = "covering"
STEP_BASIS = "step"

# Where an exception was seen.
AT_CAPTURE_BEGIN = "capture_begin"
AT_CAPTURE_END = "capture_end"
AT_REPLAY = "replay"
UNCAUGHT = "uncaught"
IN_THREAD = "thread"

# How dynamo names the function it resumes in after a graph break at a line of ``function``:
# the rest of the function, compiled as its own frame (and graph).
RESUME_FUNCTION = "torch_dynamo_resume_in_{function}_at_{line}"

# The recording mode that keeps allocation stacks for the whole run and profiles one replay
# of each graph (``run --full``); the other is "default".
FULL_MODE = "full"
ANATOMY_PART = "anatomy"  # the part GRAPHDOCTOR_OFF names to leave graphs' anatomy unread

# The allocator action that hands a block out (an Alloc row's action, as torch names it).
ALLOC_ACTION = "alloc"

# The kinds of torch.compile event, read from its logs and callbacks.
GRAPH_BREAK = "graph_break"
RECOMPILE = "recompile"
CUDAGRAPH_SKIP = "cudagraph_skip"
CUDAGRAPH_RECORD = "cudagraph_record"
RERECORD = "rerecord"
DYNAMIC_SHAPE_WARNING = "dynamic_shape_warning"
PARTITION = "partition"
TREE_RECORDING = "tree_recording"  # cudagraph trees' own log lines
TREE_RUN = "tree_run"
COMPILE = "compile"
COMPILE_START = "compile_start"  # the callback's two halves of a COMPILE span
COMPILE_END = "compile_end"
# torch's name (CallbackTrigger) for a compile callback span that recorded a CUDA graph at
# run time, not compiled: it is not counted in a compile's cost
RECORDING_TRIGGER = "CUDAGRAPH_RECORDING"

# What changed to make a guard fail, as read from its text (graphdoctor.trace.torch_logs.guards): a
# tensor the code reads through an attribute, a module buffer or a global that is now a
# new tensor of another size (re-allocated); an input tensor of another shape; a Python
# value the graph was specialised on; another object where the graph expected the same one;
# anything else (a dtype, a device, a guard whose text graphdoctor does not read).
REALLOCATED_TENSOR = "reallocated tensor"
INPUT_SHAPE = "input shape"
SPECIALISED_VALUE = "specialised value"
OTHER_OBJECT = "other object"
OTHER_GUARD = "other guard"

# The sync kind of a sync that torch's own code made (not a line of the user's).
INTERNAL_SYNC = "torch internal"

# A run with CUDA graphs off (``graphdoctor run --baseline``, ``graphdoctor compare``): the
# launcher sets GRAPHS_ENV=GRAPHS_OFF for the child; the recorder compiles torch.compile's
# graphs away and hands make_graphed_callables' callables back unchanged, and notes under
# these two headings what it switched off and what it left as written. The run's
# environment in the report carries the variable, so readers know such a run.
GRAPHS_ENV = "GRAPHDOCTOR_GRAPHS"
GRAPHS_OFF = "off"
SWITCHED_OFF = "CUDA graphs switched off"
KEPT_AS_WRITTEN = "CUDA graphs kept as written"

# When the child read the CUDA state (the ``CudaState`` record's "when"): as the script
# initialized CUDA, or at the end of the recording (the final word; older spools say
# nothing, and mean this). A run that died before its end has at most the first, and its
# report gets a note under CUDA_STATE_UNREAD with what it recorded of CUDA instead.
CUDA_AT_INIT = "init"
CUDA_AT_END = "end"
CUDA_STATE_UNREAD = "the CUDA state"


# Graphs made outside PyTorch, recorded through CUPTI (record/cupti_graphs.py)
CUPTI_ENV = "GRAPHDOCTOR_CUPTI"  # "1": subscribe (graphdoctor run --cupti sets it)
CUPTI_PART = "graphs outside PyTorch (CUPTI)"  # its lines in the "not recorded" list
CUPTI_STREAM_API = "stream capture"  # a graph's api: a capture through the driver or runtime
CUPTI_EXPLICIT_API = "graph built node by node"  # cuGraphCreate and cuGraphAdd*Node
CUPTI_APIS = (CUPTI_STREAM_API, CUPTI_EXPLICIT_API)  # a graph's api starts with one of them
NATIVE = "native"  # "stream capture (native)": a graph of a program that is not Python
# The calls a native program's syncs are (graphdoctor run ./program), by sync kind
NATIVE_SYNC_CALLS = {"stream_synchronize": "cudaStreamSynchronize()",
                     "device_synchronize": "cudaDeviceSynchronize()",
                     "event_synchronize": "cudaEventSynchronize()"}


def is_native_api(api: str) -> bool:
    """Whether a graph's api says a native program made it."""
    return api.endswith(f"({NATIVE})")
CUDA_API_ERROR = "cuda_api"  # where a CUDA error the driver returned to a call was recorded

# A host value a graph took by value (a FrozenValue row): what held it, and how its other
# value was seen. Held by an optimizer's param_groups, or a number the captured code passed
# to torch from a name: a variable (a module's, or the capturing function's), an argument
# of a user function, an attribute of the user's object.
HELD_BY_OPTIMIZER = "optimizer"
HELD_BY_VARIABLE = "variable"
HELD_BY_ARGUMENT = "argument"
HELD_BY_ATTRIBUTE = "attribute"
HELD_BY_MODULE = "module"  # a torch module's own state: its mode, weights, hooks
# What a frozen host value did in the capture (a FrozenValue's ``use``): a number a kernel
# took by value (older spools say nothing, and mean this); a torch module's training flag,
# read by its forward (dropout, batch norm); its parameters' requires_grad; the hooks it ran
# with; the memory its parameters and buffers lived in; a Python value that chose a tensor
# (``bufs[self.i]``, ``cache[key]``); a Python value an ``if`` (or a flag passed to torch)
# tested, choosing the code the capture ran; a torch backend flag (TF32, determinism).
USE_BY_VALUE = ""
USE_MODE = "mode"
USE_GRAD = "requires_grad"
USE_HOOKS = "hooks"
USE_WEIGHTS = "weights"
USE_INDEX = "index"
USE_BRANCH = "branch"
USE_BACKEND = "backend"
HOST_STATE_USES = (USE_MODE, USE_GRAD, USE_HOOKS, USE_WEIGHTS, USE_INDEX, USE_BRANCH,
                   USE_BACKEND)
# Seen by an eager call of the same function before the capture; right after an LR
# scheduler's step (its line is the change's); at a sampled replay; when the recording ended.
SEEN_EAGER = "eager"
SEEN_SCHEDULER = "scheduler"
SEEN_AT_REPLAY = "replay"
SEEN_AT_END = "end"
SEEN_AT_CALL = "call"  # right after the call that changed it (model.eval()): its line
# How the script kept a captured graph's output from one replay to the next (a KeptOutput's
# ``how``): in a list (or deque, or tuple), a dict's values, an object's attribute, a name.
KEPT_IN_LIST = "list"
KEPT_IN_DICT = "dict"
KEPT_IN_ATTRIBUTE = "attribute"
KEPT_IN_NAME = "name"
# The replays the recorder samples (memory, and frozen values): each graph's 1st, 2nd, 4th,
# 8th... and, past those, one whenever this long has passed since the last sample.
SAMPLE_EVERY_NS = 100_000_000

# The launcher's variables that say which job a rank belongs to and where it ran, kept in
# the run's environment: a report of a job spread over hosts is merged from per-rank files
# only when these agree (graphdoctor.report.job). torchrun's run id names one launch of a
# job; a scheduler's job id one allocation; the rendezvous address is shared by every node.
RUN_ID_ENV = "TORCHELASTIC_RUN_ID"
SCHEDULER_JOB_ENV = "SLURM_JOB_ID"
RENDEZVOUS_ENV = ("MASTER_ADDR", "MASTER_PORT")
NODE_RANK_ENV = "GROUP_RANK"  # torchrun's node rank (--node-rank)
JOB_ENV = (RUN_ID_ENV, SCHEDULER_JOB_ENV, *RENDEZVOUS_ENV, NODE_RANK_ENV, "LOCAL_WORLD_SIZE")
