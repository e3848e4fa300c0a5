"""Starting and watching a recording: never imports torch, nvtx or pynvml.

``graphdoctor run`` (``supervisor``) starts the recording child, or torch.distributed's
launcher (``launcher``) for several ranks, passes its signals on (``relay``) and waits.
Each process below it ends with its parent (``lifeline``), and the child runs the user's
script as Python would (``runner``). The hooks that do import torch live in
:mod:`graphdoctor.record`, which may use this package; this package never uses it.
"""
