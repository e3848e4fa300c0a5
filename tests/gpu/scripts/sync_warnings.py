"""The script's own sync debug mode for one .item(), as in issue 19, and an .item() under its
own warnings-as-errors filter: prints the sync warnings it caught, the mode it reads back,
and whether the .item() raised."""
import json
import warnings

import torch

value = torch.ones(4, device="cuda").sum()
modes = [torch.cuda.get_sync_debug_mode()]
torch.cuda.set_sync_debug_mode("warn")
modes.append(torch.cuda.get_sync_debug_mode())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    value.item()
torch.cuda.set_sync_debug_mode(0)
modes.append(torch.cuda.get_sync_debug_mode())
with warnings.catch_warnings(record=True) as quiet:  # nothing of the script's warns here
    warnings.simplefilter("always")
    value.item()
warnings.simplefilter("error")
try:
    value.item()
    raised = False
except UserWarning:
    raised = True
print("SYNCS " + json.dumps({"caught": len(caught), "caught without asking": len(quiet),
                             "modes": modes, "raised under error": raised}), flush=True)
