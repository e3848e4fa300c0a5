"""transformers' Llama (small, random weights) under torch.compile(mode="reduce-overhead"):
400 steady-state forwards of a 4x64 batch, each a graph replay wrapped in transformers' own
Python (its forward's decorators and the ModelOutput it returns). Needs transformers.

Also, inside the one process (where the host's speed from run to run does not reach it):
``hook_us``, what graphdoctor's wrappers of a compiled call (``CUDAGraphTreeManager.run``)
and of a replay (``CUDAGraph.replay``) cost a forward, blocks with them alternating with
blocks without (:func:`_common.hook_cost`); and ``graphdoctor_calls``, every function of
graphdoctor's a forward calls, by cProfile, to show whether those two are all it pays for.

``BENCH_PROFILE=FILE``: 100 more forwards under cProfile, the costliest functions to FILE."""
import os

import torch
from _common import emit, graphdoctor_calls, hook_cost, profile_block, timed_loop
from torch._inductor.cudagraph_trees import CUDAGraphTreeManager
from transformers import AutoModelForCausalLM, LlamaConfig

torch.manual_seed(0)
config = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1408,
                     num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=8,
                     max_position_embeddings=256)
model = AutoModelForCausalLM.from_config(config).to("cuda", torch.bfloat16).eval()
forward = torch.compile(model, mode="reduce-overhead")
tokens = torch.randint(3, config.vocab_size, (4, 64), device="cuda")
replay_owner = next(k for k in torch.cuda.CUDAGraph.__mro__ if "replay" in k.__dict__)


def step():
    forward(input_ids=tokens, use_cache=False)


with torch.no_grad():
    for _ in range(5):
        step()
    result = timed_loop(step, 400)
    result.update(hook_cost(step, 200, 7, [(CUDAGraphTreeManager, "run"),
                                           (replay_owner, "replay")]))
    result["graphdoctor_calls"] = graphdoctor_calls(step, 50)
    emit(result)
    if os.environ.get("BENCH_PROFILE"):
        profile_block(step, 100, os.environ["BENCH_PROFILE"])
