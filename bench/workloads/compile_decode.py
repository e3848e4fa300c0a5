"""A torch.compile(mode="reduce-overhead") decode loop: a small stack of layers run one
token at a time against a static cache, 400 steady-state steps after warm-up."""
import torch
from _common import emit, timed_loop


class Layer(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, x, cache):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = torch.softmax(q @ cache.transpose(-1, -2) / 8.0, dim=-1) @ cache
        x = x + self.out(attn + v)
        return x + self.mlp(x)


torch.manual_seed(0)
model = torch.nn.ModuleList([Layer(256) for _ in range(8)]).cuda().eval()
cache = torch.randn(1, 128, 256, device="cuda")


@torch.compile(mode="reduce-overhead")
def decode(x):
    for layer in model:
        x = layer(x, cache)
    return x


token = torch.randn(1, 1, 256, device="cuda")
with torch.no_grad():
    for _ in range(10):
        decode(token)
    emit(timed_loop(lambda: decode(token), 400))
