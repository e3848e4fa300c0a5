"""A decode loop shaped as gpt-fast's: a small Llama-style transformer with a static key/value
cache written at ``input_pos`` (an index tensor), one token at a time, ``decode_one_token``
compiled with ``mode="reduce-overhead", fullgraph=True`` as gpt-fast's ``main()`` does, the
prefill run eagerly, sampling on the GPU without a sync. Random weights, bf16.

It times itself: 128 new tokens per generate, the median of 5 generates after 2 warm ones,
eager (the same decode function, uncompiled) and compiled, and checks that both decode the
same tokens. Prints ``gpu_us_per_step``/``host_us_per_step`` (per token, compiled), the
eager figures, the speedup and tokens per second."""
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F
from _common import emit, graphdoctor_calls, profile_block
from torch import nn

DIM, LAYERS, HEADS, VOCAB, MAX_SEQ = 512, 8, 8, 32000, 512
PROMPT, NEW_TOKENS = 16, 128


class KVCache(nn.Module):
    def __init__(self, heads: int, head_dim: int, dtype: torch.dtype):
        super().__init__()
        shape = (1, heads, MAX_SEQ, head_dim)
        self.register_buffer("k", torch.zeros(shape, dtype=dtype))
        self.register_buffer("v", torch.zeros(shape, dtype=dtype))

    def update(self, pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        self.k[:, :, pos] = k
        self.v[:, :, pos] = v
        return self.k, self.v


def rotate(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)
    freqs = freqs.view(1, pairs.size(1), 1, pairs.size(3), 2)
    out = torch.stack([pairs[..., 0] * freqs[..., 0] - pairs[..., 1] * freqs[..., 1],
                       pairs[..., 1] * freqs[..., 0] + pairs[..., 0] * freqs[..., 1]], -1)
    return out.flatten(3).type_as(x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = DIM // HEADS
        self.attn_norm, self.ffn_norm = nn.RMSNorm(DIM), nn.RMSNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.proj = nn.Linear(DIM, DIM, bias=False)
        self.gate_up = nn.Linear(DIM, 2 * 1408, bias=False)
        self.down = nn.Linear(1408, DIM, bias=False)
        self.cache: KVCache | None = None

    def forward(self, x, freqs, mask, pos):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(DIM, dim=-1)
        q, k, v = (t.view(b, s, HEADS, self.head_dim) for t in (q, k, v))
        q, k = rotate(q, freqs), rotate(k, freqs)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        k, v = self.cache.update(pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, DIM))
        gate, up = self.gate_up(self.ffn_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.RMSNorm(DIM)
        self.out = nn.Linear(DIM, VOCAB, bias=False)
        half = DIM // HEADS // 2
        inv = 1.0 / (10000 ** (torch.arange(half).float() / half))
        angles = torch.outer(torch.arange(MAX_SEQ).float(), inv)
        self.register_buffer("freqs", torch.stack([angles.cos(), angles.sin()], -1))
        self.register_buffer("causal", torch.tril(torch.ones(MAX_SEQ, MAX_SEQ, dtype=torch.bool)))

    def setup_caches(self, dtype):
        for block in self.blocks:
            block.cache = KVCache(HEADS, DIM // HEADS, dtype).to(self.out.weight.device)

    def forward(self, tokens, pos):
        mask = self.causal[None, None, pos]
        freqs = self.freqs[pos]
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, freqs, mask, pos)
        return self.out(self.norm(x))


def sample(logits: torch.Tensor) -> torch.Tensor:
    """Greedy, on the GPU: no host sync per token (gpt-fast samples without one too)."""
    return torch.argmax(logits[:, -1], dim=-1, keepdim=True).to(torch.int)


def decode_one_token(model, token, pos):
    return sample(model(token, pos))


def generate(model, step, prompt) -> torch.Tensor:
    pos = torch.arange(PROMPT, device="cuda")
    token = sample(model(prompt, pos))
    pos = torch.tensor([PROMPT], device="cuda", dtype=torch.int)
    tokens = []
    for _ in range(NEW_TOKENS):
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            token = step(model, token, pos).clone()  # the graph's output, kept as gpt-fast does
        pos += 1
        tokens.append(token)
    return torch.cat(tokens, dim=1)


def timed_generates(model, step, prompt, count: int) -> tuple[list[float], torch.Tensor]:
    per_token = []
    for _ in range(count):
        torch.cuda.synchronize()
        started = time.perf_counter()
        out = generate(model, step, prompt)
        torch.cuda.synchronize()
        per_token.append((time.perf_counter() - started) * 1e6 / NEW_TOKENS)
    return per_token, out


torch.manual_seed(0)
model = Transformer().to("cuda", torch.bfloat16).eval()
for p in model.parameters():
    p.data.normal_(0, 1 / math.sqrt(DIM))
model.setup_caches(torch.bfloat16)
prompt = torch.randint(0, VOCAB, (1, PROMPT), device="cuda")
compiled = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)

with torch.no_grad():
    eager_times, eager_out = timed_generates(model, decode_one_token, prompt, 4)
    warm, _ = timed_generates(model, compiled, prompt, 2)
    times, out = timed_generates(model, compiled, prompt, 5)
    same = float((out == eager_out).float().mean())
    eager_us, compiled_us = statistics.median(eager_times[1:]), statistics.median(times)
    result = {"host_us_per_step": compiled_us, "gpu_us_per_step": compiled_us,
              "steps": NEW_TOKENS * 5, "blocks_host_us": [round(t, 2) for t in times],
              "eager_us_per_token": eager_us, "own_speedup": eager_us / compiled_us,
              "tokens_per_s": 1e6 / compiled_us, "same_tokens_as_eager": same,
              "ms_per_generate": compiled_us * NEW_TOKENS / 1000}
    if same < 0.9:
        result["check"] = "compiled decode differs from eager"
    result["graphdoctor_calls"] = graphdoctor_calls(
        lambda: generate(model, compiled, prompt), 2)
    emit(result)
    if os.environ.get("BENCH_PROFILE"):
        profile_block(lambda: generate(model, compiled, prompt), 5, os.environ["BENCH_PROFILE"])
