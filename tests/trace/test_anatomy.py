"""A graph's anatomy: its shape, its kernels' names and groups, and its JSON form."""

from __future__ import annotations

from graphdoctor.trace import anatomy
from graphdoctor.trace.anatomy import NONE, Anatomy, KernelGroup
from graphdoctor.trace.assemble import assemble_file
from tests.conftest import RECORDINGS

TANH = ("void at::native::vectorized_elementwise_kernel<8, at::native::tanh_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, "
        "std::array<char*, 2ul> >(int, at::native::tanh_kernel_cuda(at::TensorIteratorBase&)"
        "::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)")


def test_a_chain_is_as_long_as_its_nodes_and_one_wide() -> None:
    assert anatomy.shape_of(4, [(0, 1), (1, 2), (2, 3)]) == (4, 1)


def test_a_fork_and_join_is_wider_than_it_is_long() -> None:
    # 0 -> {1, 2, 3} -> 4: three nodes side by side
    edges = [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)]
    assert anatomy.shape_of(5, edges) == (3, 3)


def test_a_node_after_a_long_and_a_short_branch_counts_the_long_one() -> None:
    edges = [(0, 1), (1, 2), (2, 4), (3, 4)]  # 3 starts on its own
    assert anatomy.shape_of(5, edges) == (4, 2)


def test_no_nodes_no_shape() -> None:
    assert anatomy.shape_of(0, []) == (0, 0)


def test_a_group_is_the_name_without_void_and_parameters() -> None:
    name = anatomy.group_name(TANH)
    assert name.startswith("at::native::vectorized_elementwise_kernel<8, at::native::tanh")
    assert name.endswith("std::array<char*, 2ul> >")
    assert anatomy.group_name("triton_poi_fused_gelu_0") == "triton_poi_fused_gelu_0"
    assert anatomy.group_name("void f<int>(float)") == "f<int>"


def test_short_names_keep_the_operation_a_template_names() -> None:
    group = anatomy.group_name(TANH)
    assert anatomy.short_kernel_name(group) == "vectorized_elementwise_kernel<tanh_kernel_cuda>"
    fill = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, x>"
    assert anatomy.short_kernel_name(fill) == "vectorized_elementwise_kernel<FillFunctor>"
    assert anatomy.short_kernel_name("nvjet_sm90_tst_64x8_NNT") == "nvjet_sm90_tst_64x8_NNT"


def test_kernels_are_grouped_largest_first_and_the_tail_folds_into_one() -> None:
    names = ["b", "a", "b"] + [f"k{i}" for i in range(anatomy.MAX_GROUPS + 5)]
    groups, index = anatomy.grouped(names)
    assert groups[0] == KernelGroup("b", 2) and len(groups) == anatomy.MAX_GROUPS
    assert groups[-1].name == anatomy.OTHER_KERNELS
    assert sum(g.count for g in groups) == len(names)
    assert index[0] == index[2] == 0 and index[-1] == anatomy.MAX_GROUPS - 1


def test_kernel_times_fill_the_groups_and_unknown_kernels_go_nowhere_silently() -> None:
    found = Anatomy(3, 2, {anatomy.KERNEL: 3}, (KernelGroup("mm", 2), KernelGroup("tanh", 1)))
    timed = anatomy.with_kernel_times(found, {"mm": 900, "tanh": 100, "memcpy32_post": 5}, 1005)
    assert [g.gpu_ns for g in timed.kernels] == [900, 100] and timed.profiled_replay_ns == 1005
    assert found.kernels[0].gpu_ns == NONE


def test_an_anatomy_survives_its_json_form() -> None:
    found = Anatomy(2, 1, {anatomy.KERNEL: 1, anatomy.HOST: 1}, (KernelGroup("mm", 1, 7),),
                    2, 1, ("cb (libx.so)",), True, (0, 3), (0, NONE), ((0, 1),), 10, 7)
    plain = {"nodes": 2, "edges": 1, "node_types": {"kernel": 1, "host": 1},
             "kernels": [{"name": "mm", "count": 1, "gpu_ns": 7}], "longest_chain": 2,
             "widest_level": 1, "host_functions": ["cb (libx.so)"], "nodes_kept": True,
             "node_type": [0, 3], "node_kernel": [0, -1], "edge_list": [[0, 1]],
             "read_ns": 10, "profiled_replay_ns": 7}
    assert anatomy.from_plain(plain) == found
    assert anatomy.from_plain(None) is None and anatomy.from_plain({"x": 1}) is None


def test_a_recorded_graph_carries_its_anatomy_through_the_report_codec() -> None:
    from graphdoctor.trace import codec

    trace = assemble_file(RECORDINGS / "launch_bound.spool.jsonl.gz")
    again = codec.decode(codec.encode(trace))
    assert again.graphs[0].anatomy == trace.graphs[0].anatomy is not None
