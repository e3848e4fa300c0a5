"""Each capture error of the known-errors table, caused on a GPU, with torch's own words.

    python tests/gpu/scripts/known_errors.py OUT.json        (one GPU; two for the NCCL rows)

Every case runs in its own process (a failed capture can leave the context unusable) and
prints the exception the script would see; the NCCL cases run two ranks under torchrun and
keep the tail of what each printed (a watchdog thread's error never reaches the script).
The committed result is tests/diagnose/known_error_messages.json.
"""
import json
import os
import subprocess
import sys
import traceback

import torch

SINGLE = ("optimizer_not_capturable", "item", "empty_cache", "cudnn_benchmark",
          "cublas_first_use", "manual_seed", "cuda_manual_seed", "new_generator",
          "get_rng_state")
RANKS = ("nccl_barrier", "nccl_async_error_handling")


def _capture(body) -> None:
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()


def case(name: str) -> None:
    x = torch.randn(64, 64, device="cuda")
    if name == "optimizer_not_capturable":
        w = torch.nn.Parameter(torch.randn(64, device="cuda"))
        opt = torch.optim.Adam([w])
        w.grad = torch.ones_like(w)
        opt.step()
        _capture(opt.step)
    elif name == "item":
        _capture(lambda: x.sum().item())
    elif name == "empty_cache":
        _capture(torch.cuda.empty_cache)
    elif name == "cudnn_benchmark":
        torch.backends.cudnn.benchmark = True
        conv = torch.nn.Conv2d(3, 8, 3).cuda()
        conv(torch.randn(1, 3, 16, 16, device="cuda"))
        _capture(lambda: conv(torch.randn(4, 3, 64, 64, device="cuda")))
    elif name == "cublas_first_use":
        _capture(lambda: x @ x)
    elif name == "manual_seed":
        _capture(lambda: torch.manual_seed(1))
    elif name == "cuda_manual_seed":
        _capture(lambda: torch.cuda.manual_seed(1))
    elif name == "new_generator":
        gen = torch.Generator(device="cuda")
        _capture(lambda: torch.randn(8, device="cuda", generator=gen))
    elif name == "get_rng_state":
        _capture(torch.cuda.get_rng_state)
    elif name in RANKS:
        ranks_case(name)


def ranks_case(name: str) -> None:
    import time

    import torch.distributed as dist
    dist.init_process_group("nccl")
    torch.cuda.set_device(dist.get_rank())
    y = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(y)
    if name == "nccl_barrier":
        _capture(dist.barrier)
    else:  # a long global-mode capture while the watchdog polls the eager collective
        for _ in range(50):
            dist.all_reduce(y)

        def slow():
            for _ in range(20):
                dist.all_reduce(y)
                time.sleep(0.1)
        _capture(slow)
    torch.cuda.synchronize()
    dist.destroy_process_group()


def run_one(name: str) -> None:
    try:
        case(name)
        print(json.dumps({"case": name, "raised": None}))
    except BaseException as error:  # noqa: BLE001  # the point: what torch raised
        print(json.dumps({"case": name, "raised": type(error).__name__,
                          "message": str(error),
                          "where": traceback.extract_tb(error.__traceback__)[-1].name}))


def main(out: str) -> None:
    found = []
    for name in SINGLE + (RANKS if torch.cuda.device_count() >= 2 else ()):
        command = [sys.executable, __file__, "--case", name]
        if name in RANKS:
            command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                       __file__, "--case", name]
        env = dict(os.environ, TORCH_NCCL_ASYNC_ERROR_HANDLING="1")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                                  env=env)
            out_text, err_text, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as timeout:
            out_text = (timeout.stdout or b"").decode() if isinstance(timeout.stdout, bytes) \
                else timeout.stdout or ""
            err_text, code = "timed out", -1
        rows = [json.loads(line) for line in out_text.splitlines() if line.startswith("{")]
        found.append({"case": name, "exit_code": code, "results": rows,
                      "stderr_tail": err_text[-3000:]})
        print(name, code, rows, flush=True)
    facts = {"torch": torch.__version__, "cuda": torch.version.cuda,
             "device": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(),
             "python": sys.version.split()[0]}
    with open(out, "w") as f:
        json.dump({"recorded_with": "python tests/gpu/scripts/known_errors.py OUT.json",
                   "facts": facts, "cases": found}, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--case":
        run_one(sys.argv[2])
    else:
        main(sys.argv[1])
