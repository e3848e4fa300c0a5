"""compare's variants: how --variant is read, the built-in two, and the rotating order."""

from __future__ import annotations

import pytest

from graphdoctor.errors import GraphDoctorError
from graphdoctor.launch.variants import (
    AS_WRITTEN,
    WITHOUT_GRAPHS,
    Variant,
    all_variants,
    parse_variant,
    schedule,
)
from graphdoctor.trace.names import GRAPHS_ENV, GRAPHS_OFF


@pytest.mark.parametrize(("text", "variant"), [
    ("tf32:NVIDIA_TF32_OVERRIDE=1", Variant("tf32", (("NVIDIA_TF32_OVERRIDE", "1"),))),
    ("two:A=1,B=2", Variant("two", (("A", "1"), ("B", "2")))),
    ("spaced:A=1 B=", Variant("spaced", (("A", "1"), ("B", "")))),
    ("bf16:--dtype bf16", Variant("bf16", (), ("--dtype", "bf16"))),
    ("both:A=1 --steps 20", Variant("both", (("A", "1"),), ("--steps", "20"))),
    ("quoted:--name 'a b'", Variant("quoted", (), ("--name", "a b"))),
    ("alloc:PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128",
     Variant("alloc", (("PYTORCH_CUDA_ALLOC_CONF",
                        "expandable_segments:True,max_split_size_mb:128"),))),
    ("arg:data.txt", Variant("arg", (), ("data.txt",))),
])
def test_a_variant_sets_environment_then_arguments(text: str, variant: Variant) -> None:
    assert parse_variant(text) == variant


@pytest.mark.parametrize(("text", "message"), [
    ("no-colon", "write NAME:SPEC"), (":A=1", "write NAME:SPEC"), ("a b:A=1", "NAME:SPEC"),
    ("empty:", "sets nothing"), ("bad:--x 'open", "No closing quotation"),
])
def test_a_malformed_variant_is_a_usage_error(text: str, message: str) -> None:
    with pytest.raises(GraphDoctorError, match=message):
        parse_variant(text)


def test_the_built_in_variants_come_first_and_names_differ() -> None:
    assert all_variants(()) == (AS_WRITTEN, WITHOUT_GRAPHS)
    assert WITHOUT_GRAPHS.env == ((GRAPHS_ENV, GRAPHS_OFF),) and WITHOUT_GRAPHS.graphs_off
    extra = parse_variant("x:A=1")
    assert all_variants((extra,)) == (AS_WRITTEN, WITHOUT_GRAPHS, extra)
    with pytest.raises(GraphDoctorError, match="graphs-off"):
        all_variants((parse_variant("graphs-off:A=1"),))
    with pytest.raises(GraphDoctorError, match=": x$"):
        all_variants((extra, parse_variant("x:B=1")))


def test_runs_alternate_in_rotating_order() -> None:
    a, b, c = AS_WRITTEN, WITHOUT_GRAPHS, parse_variant("c:C=1")
    order = schedule((a, b, c), 4)
    assert [(r, v.name) for r, v in order] == [
        (0, "as-written"), (0, "graphs-off"), (0, "c"),
        (1, "graphs-off"), (1, "c"), (1, "as-written"),
        (2, "c"), (2, "as-written"), (2, "graphs-off"),
        (3, "as-written"), (3, "graphs-off"), (3, "c")]
    assert [v.name for _, v in schedule((a, b), 2)] == ["as-written", "graphs-off",
                                                        "graphs-off", "as-written"]
