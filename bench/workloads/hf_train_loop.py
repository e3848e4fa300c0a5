"""transformers' Llama (small, random weights) trained eagerly: a script's own training
step (``model(input_ids, labels=...)``, ``loss.backward()``, AdamW's step) on a 4x64 batch,
200 steps after 20 of warmup. A real library's model is a deep tree of Python modules (the
model's and its layers' forwards are transformers' code, the Linears and norms torch's), so
this is what the eager history's ``sys.monitoring`` callbacks cost a real model's step
inside their window (each of the user's functions' and step parts' first 256 calls).
Needs transformers.

``monitoring_us``: what those callbacks cost a step, by blocks with them on and off in one
process (:func:`_common.monitoring_cost`); ``graphdoctor_calls``: graphdoctor's functions a
step calls, by cProfile (callbacks do not show there)."""
import torch
from _common import eager_window, emit
from transformers import AutoModelForCausalLM, LlamaConfig

torch.manual_seed(0)
config = LlamaConfig(vocab_size=8192, hidden_size=256, intermediate_size=704,
                     num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=8,
                     max_position_embeddings=256)
model = AutoModelForCausalLM.from_config(config).to("cuda")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
tokens = torch.randint(3, config.vocab_size, (4, 64), device="cuda")


def body():
    optimizer.zero_grad(set_to_none=True)
    loss = model(input_ids=tokens, labels=tokens).loss
    loss.backward()
    optimizer.step()


for _ in range(20):
    body()
emit(eager_window(body))
