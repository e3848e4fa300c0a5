"""The variants ``graphdoctor compare`` runs a script under, and the order it runs them in.

Two variants are always there: the script as written, and the same with CUDA graphs off
(``GRAPHDOCTOR_GRAPHS=off``). The user adds more with ``--variant NAME:SPEC``, where SPEC
holds environment settings (``A=1,B=2``), arguments for the script (``--dtype bf16``), or
both, settings first (``tf32:NVIDIA_TF32_OVERRIDE=1 --steps 50``). Runs alternate in
rotating order, as bench/overhead.py runs its variants: repeat r starts with variant
r mod n, so that no variant always runs first (on a cold GPU) or last.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from graphdoctor.errors import GraphDoctorError
from graphdoctor.trace.names import GRAPHS_ENV, GRAPHS_OFF

_NAME = re.compile(r"[A-Za-z0-9][\w.+-]*")
_SETTING = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


@dataclass(frozen=True)
class Variant:
    name: str
    env: tuple[tuple[str, str], ...] = ()  # set for the script
    args: tuple[str, ...] = ()  # after the script's own arguments

    @property
    def graphs_off(self) -> bool:
        return (GRAPHS_ENV, GRAPHS_OFF) in self.env


AS_WRITTEN = Variant("as-written")
WITHOUT_GRAPHS = Variant("graphs-off", ((GRAPHS_ENV, GRAPHS_OFF),))
BUILT_IN = (AS_WRITTEN, WITHOUT_GRAPHS)
VARIANT_HELP = ("NAME:SPEC, SPEC being environment settings (A=1,B=2), arguments for the "
                "script (--flag value), or both, settings first; repeatable")


def parse_variant(text: str) -> Variant:
    """``NAME:A=1,B=2 --flag value`` -> the variant; a malformed one is a usage error."""
    name, colon, spec = text.partition(":")
    if not colon or not _NAME.fullmatch(name):
        raise GraphDoctorError(f"--variant {text!r}: write NAME:SPEC, e.g. "
                               "tf32:NVIDIA_TF32_OVERRIDE=1 or bf16:--dtype bf16")
    try:
        words = shlex.split(spec)
    except ValueError as error:
        raise GraphDoctorError(f"--variant {text!r}: {error}") from None
    env: list[tuple[str, str]] = []
    while words and (pairs := settings(words[0])):
        env += pairs
        words = words[1:]
    if not env and not words:
        raise GraphDoctorError(f"--variant {text!r} sets nothing: add A=1 or --flag")
    return Variant(name, tuple(env), tuple(words))


def settings(word: str) -> list[tuple[str, str]]:
    """``A=1,B=2`` -> [("A", "1"), ("B", "2")]; [] for a word that is not settings. A piece
    after a comma that is not ``NAME=`` belongs to the value before it
    (``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128``)."""
    pieces = word.split(",")
    if not _SETTING.fullmatch(pieces[0]):
        return []
    pairs: list[list[str]] = []
    for piece in pieces:
        if _SETTING.fullmatch(piece):
            pairs.append(piece.split("=", 1))
        else:
            pairs[-1][1] += "," + piece
    return [(key, value) for key, value in pairs]


def all_variants(extra: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """The built-in variants, then the user's; names must differ."""
    variants = (*BUILT_IN, *extra)
    names = [v.name for v in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise GraphDoctorError(f"--variant names must differ from each other and from "
                               f"{', '.join(v.name for v in BUILT_IN)}: {', '.join(twice)}")
    return variants


def schedule(variants: tuple[Variant, ...], repeats: int) -> list[tuple[int, Variant]]:
    """(repeat, variant) in the order to run them: each repeat rotated one further."""
    order: list[tuple[int, Variant]] = []
    for repeat in range(repeats):
        shift = repeat % len(variants)
        order += [(repeat, v) for v in variants[shift:] + variants[:shift]]
    return order
