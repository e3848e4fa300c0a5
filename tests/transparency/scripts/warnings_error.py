"""Warns from its own code after torch is imported; run with -W error for this module, and
turns every warning into an error itself half-way. Prints what happened each time."""
import sys
import warnings

import torch


def warn(what):
    try:
        warnings.warn(what, stacklevel=1)
    except UserWarning as error:
        print(f"raised: {error}", flush=True)
    else:
        print(f"warned: {what}", flush=True)


torch.ones(4).sum().item()
print("options", sys.warnoptions, "filters", len(warnings.filters), warnings.filters[0][0])
warn("under -W")
warnings.simplefilter("error")
torch.ones(4).sum().item()
warn("under simplefilter('error')")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.ones(4).sum().item()
    warnings.warn("caught", stacklevel=1)
print("caught", [str(w.message) for w in caught])
