"""transformers' Llama (small, random weights) under torch.compile(mode="reduce-overhead"):
400 steady-state forwards of a 4x64 batch, each a graph replay wrapped in transformers' own
Python (its forward's decorators and the ModelOutput it returns). Needs transformers.

``BENCH_PROFILE=FILE``: 100 more forwards under cProfile, the costliest functions to FILE."""
import os

import torch
from _common import emit, profile_block, timed_loop
from transformers import AutoModelForCausalLM, LlamaConfig

torch.manual_seed(0)
config = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1408,
                     num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=8,
                     max_position_embeddings=256)
model = AutoModelForCausalLM.from_config(config).to("cuda", torch.bfloat16).eval()
forward = torch.compile(model, mode="reduce-overhead")
tokens = torch.randint(3, config.vocab_size, (4, 64), device="cuda")

with torch.no_grad():
    for _ in range(5):
        forward(input_ids=tokens, use_cache=False)
    emit(timed_loop(lambda: forward(input_ids=tokens, use_cache=False), 400))
    if os.environ.get("BENCH_PROFILE"):
        profile_block(lambda: forward(input_ids=tokens, use_cache=False), 100,
                      os.environ["BENCH_PROFILE"])
