"""Real torch.compile recompile texts, for the tests of reading them.

Printed by torch 2.13.0+cpu (Python 3.11, 2026-11-24) for scripts compiled with
``backend="eager"`` and ``torch._logging.set_logs(recompiles=True)``: ``LOG_*`` are messages
of the ``torch._dynamo.guards.__recompiles`` logger as ``LogRecord.getMessage()`` returns
them, ``REASONS_*`` the list ``torch._dynamo.convert_frame.get_and_maybe_log_recompilation_
reasons`` returned for the same recompile (what graphdoctor's recorder keeps). The scripts:

``/tmp/rc/buf.py`` (a module's KV-cache buffer re-allocated at a larger size between calls)::

    class KV(nn.Module):                               # line 4
        def __init__(self):
            super().__init__()
            self.register_buffer("k_cache", torch.zeros(1, 2, 16, 8))
        def setup(self, n):
            self.k_cache = torch.zeros(1, 2, n, 8)
    class Attn(nn.Module):
        ...
        def forward(self, x, pos):                     # line 16
            self.kv_cache.k_cache[:, :, pos] = self.wk(x)
            return self.kv_cache.k_cache.sum(2)
    class Model(nn.Module):
        ...
        def forward(self, x, pos):                     # line 24
            return self.layers[0]["attention"](x, pos)
    step = torch.compile(Model(), backend="eager")
    for n in (16, 32, 48, 80):  # under torch.set_grad_enabled(False)
        m.layers[0]["attention"].kv_cache.setup(n)
        for pos in range(2):
            step(torch.randn(1, 2, 8), pos)

``/tmp/rc/intarg.py`` (a function called with a changing int, then a changing shape)::

    def f(x, n):                                       # line 3
        return x * n + 1
    g = torch.compile(f, backend="eager")
    for n in (1, 2, 3, 4): g(torch.randn(4), n)
    for size in (4, 8, 16, 32): g(torch.randn(size), 2)

and one-off scripts for a re-assigned global, a plain tensor attribute, a tensor marked with
``mark_static_address(guard=True)`` then replaced, a dtype change, a string argument and a
function argument (``REASONS_VARIETY``, one list per recompile, file ``variety.py``).

``*_211_*``: torch 2.11.0+cu130 on an H100, for fixtures/scripts/
compile_recompile_realloc_cache.py (the wording of issue 11's real run).
"""
# ruff: noqa: E501 - torch's texts verbatim: a line of source per line of its text

from __future__ import annotations

# 0/1: the second call of the first cache size (pos 0 -> 1)
LOG_POS = ('Recompiling function forward in /tmp/rc/buf.py:24\n'
           '    triggered by the following guard failure(s):\n'
           '    - 0/0: pos == 0                                                 # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward\n'
           '    - User stack trace:\n'
           '    -   File "/tmp/rc/buf.py", line 25, in forward\n'
           '    -     return self.layers[0]["attention"](x, pos)\n'
           '    -   File "/tmp/rc/buf.py", line 17, in forward\n'
           '    -     self.kv_cache.k_cache[:, :, pos] = self.wk(x)')

# 0/2: the cache re-allocated from 16 to 32 rows
LOG_REALLOC = ('Recompiling function forward in /tmp/rc/buf.py:24\n'
               '    triggered by the following guard failure(s):\n'
               "    - 0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 32\n"
               "    - 0/0: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 32")

# 0/5: after three re-allocations, pos 0 -> 1 again (every reason listed)
LOG_POS_AFTER_REALLOC = ('Recompiling function forward in /tmp/rc/buf.py:24\n'
                         '    triggered by the following guard failure(s):\n'
                         '    - 0/4: pos == 0  # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward (_dynamo/utils.py:4231 in run_node)\n'
                         "    - 0/3: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 48\n"
                         "    - 0/2: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 48\n"
                         "    - 0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 48\n"
                         '    - 0/0: pos == 0                                                 # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward\n'
                         '    - User stack trace:\n'
                         '    -   File "/tmp/rc/buf.py", line 25, in forward\n'
                         '    -     return self.layers[0]["attention"](x, pos)\n'
                         '    -   File "/tmp/rc/buf.py", line 17, in forward\n'
                         '    -     self.kv_cache.k_cache[:, :, pos] = self.wk(x)')

# 0/6: the cache re-allocated from 48 to 80 rows, as the recorder receives it
REASONS_REALLOC_80 = [
                         "0/5: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 80",
                         "0/4: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 80",
                         "0/3: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 80",
                         "0/2: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 80",
                         "0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 80",
                         "0/0: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 80",
                     ]

# every recompile of buf.py, 0/1 to 0/7, as the recorder receives them
REASONS_BUF = [
                  [
                      ('0/0: pos == 0                                                 # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward\n'
                       'User stack trace:\n'
                       '  File "/tmp/rc/buf.py", line 25, in forward\n'
                       '    return self.layers[0]["attention"](x, pos)\n'
                       '  File "/tmp/rc/buf.py", line 17, in forward\n'
                       '    self.kv_cache.k_cache[:, :, pos] = self.wk(x)'),
                  ],
                  [
                      "0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 32",
                      "0/0: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 32",
                  ],
                  [
                      '0/2: pos == 0  # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward (_dynamo/utils.py:4231 in run_node)',
                      "0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 32",
                      ('0/0: pos == 0                                                 # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward\n'
                       'User stack trace:\n'
                       '  File "/tmp/rc/buf.py", line 25, in forward\n'
                       '    return self.layers[0]["attention"](x, pos)\n'
                       '  File "/tmp/rc/buf.py", line 17, in forward\n'
                       '    self.kv_cache.k_cache[:, :, pos] = self.wk(x)'),
                  ],
                  [
                      "0/3: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 48",
                      "0/2: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 48",
                      "0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 48",
                      "0/0: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 48",
                  ],
                  [
                      '0/4: pos == 0  # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward (_dynamo/utils.py:4231 in run_node)',
                      "0/3: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 48",
                      "0/2: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 48",
                      "0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 48",
                      ('0/0: pos == 0                                                 # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward\n'
                       'User stack trace:\n'
                       '  File "/tmp/rc/buf.py", line 25, in forward\n'
                       '    return self.layers[0]["attention"](x, pos)\n'
                       '  File "/tmp/rc/buf.py", line 17, in forward\n'
                       '    self.kv_cache.k_cache[:, :, pos] = self.wk(x)'),
                  ],
                  [
                      "0/5: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 80",
                      "0/4: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 80",
                      "0/3: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 80",
                      "0/2: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 80",
                      "0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 80",
                      "0/0: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 80",
                  ],
                  [
                      '0/6: pos == 0  # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward (_dynamo/utils.py:4231 in run_node)',
                      "0/5: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 80",
                      "0/4: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 80",
                      "0/3: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 80",
                      "0/2: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 32, actual 80",
                      "0/1: tensor 'self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 16, actual 80",
                      ('0/0: pos == 0                                                 # self.kv_cache.k_cache[:, :, pos] = self.wk(x)  # mp/rc/buf.py:17 in forward\n'
                       'User stack trace:\n'
                       '  File "/tmp/rc/buf.py", line 25, in forward\n'
                       '    return self.layers[0]["attention"](x, pos)\n'
                       '  File "/tmp/rc/buf.py", line 17, in forward\n'
                       '    self.kv_cache.k_cache[:, :, pos] = self.wk(x)'),
                  ],
              ]

# intarg.py: n == 1 fails (0/1), then x's size (0/2)
LOG_INT = ('Recompiling function f in /tmp/rc/intarg.py:3\n'
           '    triggered by the following guard failure(s):\n'
           '    - 0/0: n == 1                                                   # return x * n + 1  # mp/rc/intarg.py:4 in f\n'
           '    - User stack trace:\n'
           '    -   File "/tmp/rc/intarg.py", line 4, in f\n'
           '    -     return x * n + 1')
LOG_SHAPE = ('Recompiling function f in /tmp/rc/intarg.py:3\n'
             '    triggered by the following guard failure(s):\n'
             "    - 0/1: tensor 'x' size mismatch at index 0. expected 4, actual 8\n"
             '    - 0/0: n == 1                                                   # return x * n + 1  # mp/rc/intarg.py:4 in f\n'
             '    - User stack trace:\n'
             '    -   File "/tmp/rc/intarg.py", line 4, in f\n'
             '    -     return x * n + 1')
REASONS_VARIETY = [
                      [
                          "0/0: tensor 'G['cache']' size mismatch at index 0. expected 4, actual 6",
                      ],
                      [
                          "1/0: tensor 'self.buf' size mismatch at index 0. expected 4, actual 6",
                      ],
                      [
                          ("2/0: ___check_obj_id(G['static'], 139658950911440), type=<class 'torch.Tensor'>  # return static + x  # variety.py:24 in use_static\n"
                           'User stack trace:\n'
                           '  File "variety.py", line 24, in use_static\n'
                           '    return static + x'),
                      ],
                      [
                          "3/0: tensor 'x' dtype mismatch. expected Float, actual Double",
                      ],
                      [
                          ('4/0: mode == \'a\'                                              # return x * 2 if mode == "a" else x  # variety.py:36 in flag\n'
                           'User stack trace:\n'
                           '  File "variety.py", line 36, in flag\n'
                           '    return x * 2 if mode == "a" else x'),
                      ],
                      [
                          ("5/0: ___check_obj_id(fn, 139659344423696), type=<class 'builtin_function_or_method'>  # return fn(x)  # variety.py:41 in obj\n"
                           'User stack trace:\n'
                           '  File "variety.py", line 41, in obj\n'
                           '    return fn(x)'),
                      ],
                  ]

# torch 2.11.0+cu130 on an NVIDIA H100 (2026-11-24): fixtures/scripts/
# compile_recompile_realloc_cache.py, compiled decode_step (line 60) under reduce-overhead.
# The log message of 0/2, from a run of a copy without comments (decode_step at line 56);
# and the reasons of 0/3 as graphdoctor's recorder received them.
LOG_211_REALLOC = ('Recompiling function decode_step in /tmp/s.py:56\n'
                   '    triggered by the following guard failure(s):\n'
                   "    - 0/1: tensor 'model._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 80, actual 112\n"
                   "    - 0/0: tensor 'model._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 112")

REASONS_211_REALLOC = [
    "0/2: tensor 'model._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 112, actual 144",
    "0/1: tensor 'model._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 80, actual 144",
    "0/0: tensor 'model._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']._buffers['k_cache']' size mismatch at index 2. expected 48, actual 144",
]
