"""``graphdoctor export -f dot --graph N``: a recorded graph's nodes and edges as DOT."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.report import io
from graphdoctor.report.render.graph_dot import to_dot
from graphdoctor.trace import anatomy
from tests.hostile import EVERYTHING, leaks
from tests.reports import report_for

QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')  # a DOT string, its quotes and backslashes escaped


def test_a_chain_of_400_kernels_is_400_nodes_and_399_edges() -> None:
    dot = to_dot(report_for("launch_bound"), 0)
    assert dot.startswith('digraph "graph_0" {')
    assert 'label="graph 0: 400 nodes: 400 kernels · chain 400 of 400, width 1";' in dot
    assert len(re.findall(r"^  n\d+ \[", dot, re.M)) == 400
    assert len(re.findall(r"^  n\d+ -> n\d+;$", dot, re.M)) == 399
    assert 'n1 [label="1: vectorized_elementwise_kernel<tanh_kernel_cuda>", shape=box]' in dot


def test_a_host_node_stands_out_with_its_function() -> None:
    dot = to_dot(report_for("host_node_in_capture"), 0)
    [host] = [line for line in dot.splitlines() if "shape=octagon" in line]
    assert "host\\na function at 0x" in host and "fillcolor" in host


def test_names_from_a_hostile_report_are_quoted_and_shown_never_obeyed() -> None:
    report = report_for("host_node_in_capture")
    graph = report.trace.graphs[0]
    assert graph.anatomy is not None
    kernels = tuple(dataclasses.replace(g, name=g.name + '"];\\' + EVERYTHING)
                    for g in graph.anatomy.kernels)
    attacked = dataclasses.replace(graph, anatomy=dataclasses.replace(
        graph.anatomy, kernels=kernels, host_functions=('x"\\' + EVERYTHING,)))
    report = dataclasses.replace(report, trace=dataclasses.replace(
        report.trace, graphs=[attacked, *report.trace.graphs[1:]]))
    dot = to_dot(report, 0)
    assert not leaks(dot)
    for line in dot.splitlines()[3:-1]:
        if "->" not in line:  # each node line is one well-formed, quoted label
            assert "label=" in line and QUOTED.sub("", line).count('"') == 0, line


def test_what_cannot_be_drawn_says_why_and_exits_2(tmp_path: Path) -> None:
    report = report_for("launch_bound")
    graph = report.trace.graphs[0]
    assert graph.anatomy is not None
    cases = {
        "no graph 5 in this report": (report, ["--graph", "5"]),
        "graph 0 has no anatomy in this report": (_with(report, None), ["--graph", "0"]),
        "graph 0 cannot be drawn: the report keeps its counts but not its nodes and edges":
            (_with(report, dataclasses.replace(graph.anatomy, nodes_kept=False, nodes=12)),
             ["--graph", "0"]),
        f"graph 0 cannot be drawn: it has 5,000 nodes, more than the "
        f"{anatomy.MAX_STRUCTURE:,}": (_with(report, dataclasses.replace(
            graph.anatomy, nodes_kept=False, nodes=5000)), ["--graph", "0"]),
        "--format dot draws one graph: name it with --graph N": (report, []),
    }
    for number, (message, (document, options)) in enumerate(cases.items()):
        path = io.save(document, tmp_path / f"r{number}.json")
        result = CliRunner().invoke(main, ["export", str(path), "-f", "dot", *options,
                                           "-o", str(tmp_path / "g.dot")])
        assert result.exit_code == 2 and message in result.output, (message, result.output)


def test_the_export_writes_the_file_and_says_how_to_draw_it(tmp_path: Path) -> None:
    path = io.save(report_for("launch_bound"), tmp_path / "run.json")
    result = CliRunner().invoke(main, ["export", str(path), "-f", "dot", "--graph", "0",
                                       "-o", str(tmp_path / "g.dot")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "g.dot").read_text() == to_dot(report_for("launch_bound"), 0)
    assert "dot -Tsvg" in result.output


def _with(report, found):  # type: ignore[no-untyped-def]
    graphs = [dataclasses.replace(report.trace.graphs[0], anatomy=found)]
    return dataclasses.replace(report, trace=dataclasses.replace(report.trace, graphs=graphs))
