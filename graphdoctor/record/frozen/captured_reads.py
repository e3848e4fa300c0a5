"""What a captured function's source read to choose what ran, up to a line: the keys that
picked a tensor out of a container (``self.outs[self.slot]``, ``cache[name]``), the tests of
the ``if`` and ``while`` statements (and conditional expressions) it passed through, and the
names handed to a call as flags (``F.dropout(x, p, training=self.drop)``), with the safe
evaluation that reads them again. Read with ``ast``, once per line. Imports no torch.

What ran by the time a line runs is taken from the function's structure: every statement
before it in each block that holds it (a compound one's header only: its test, its
iterable), the headers of the blocks that hold it, and the line's own statement. A name a
``for`` of those blocks binds is the loop's, not the script's state, and is left out.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from graphdoctor.record.frozen.captured_names import dotted_name, parse_source
from graphdoctor.trace.names import USE_BRANCH, USE_INDEX

Chain = tuple[str, ...]
PLAIN = (int, float, bool, str, type(None))
_CHAIN = 4  # the longest dotted name followed: self.cfg.model.flag
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True)
class Read:
    """A value the source read that chose what ran: ``USE_INDEX`` (``expr`` the key that
    indexed ``container``) or ``USE_BRANCH`` (``expr`` a test, or a flag passed to a call)."""

    use: str
    line: int
    expr: ast.expr
    text: str  # as the source writes the whole read: "self.outs[self.slot]", "self.calibrate"
    chains: tuple[Chain, ...]
    container: Chain = ()
    flag: bool = False  # a name passed to a call: a choice only where it holds a bool


@functools.lru_cache(maxsize=2048)
def reads_before(path: str, first_line: int, name: str, line: int,
                 ahead: bool = False) -> tuple[Read, ...]:
    """The reads of the function ``name`` defined at ``first_line`` of ``path`` (its
    ``def`` or first decorator; 0 for a module's own code) that ran by the time ``line``
    runs; with ``ahead``, also those its call goes on to make after it (each block's later
    statements, a compound one's header only, up to a ``return`` or ``raise``): a function
    the capture called returns before the capture ends. Empty where the source cannot be
    read."""
    tree = parse_source(path)
    body = _body_of(tree, first_line, name) if tree is not None else None
    if body is None:
        return ()
    loops: set[str] = set()
    parts = list(_executed(body, line, loops, ahead))
    reads = [read for part, current, test in parts
             for read in _reads_in(part, current, test, loops)]
    found: dict[tuple[str, int, str], Read] = {}
    for read in reads:
        if not any(chain[0] in loops for chain in read.chains):
            found.setdefault((read.use, read.line, read.text), read)
    return tuple(found.values())


def _body_of(tree: ast.Module, first_line: int, name: str) -> list[ast.stmt] | None:
    if name == "<module>":
        return tree.body
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            starts = [node.lineno, *(d.lineno for d in node.decorator_list)]
            if first_line in starts:
                return node.body
    return None


def _executed(body: list[ast.stmt], line: int, loops: set[str],
              ahead: bool) -> Iterator[tuple[ast.AST, bool, bool]]:
    """(part, whether it is the line's own statement, whether it is a test) for what of
    ``body`` ran by the time ``line`` runs (and, with ``ahead``, what runs after it);
    ``loops`` gets the names bound by the ``for`` statements holding it."""
    for index, statement in enumerate(body):
        if statement.lineno > line:
            return
        inside = line <= (statement.end_lineno or statement.lineno)
        if isinstance(statement, _DEFINITIONS):
            continue
        yield from _parts(statement, inside and not _in_blocks(_blocks(statement), line))
        if inside and isinstance(statement, (ast.For, ast.AsyncFor)):
            loops.update(_bound(statement.target))
        for block in _blocks(statement) if inside else ():
            if _in_block(block, line):
                yield from _executed(block, line, loops, ahead)
        if inside:
            if ahead:
                yield from _after(body[index + 1:])
            return


def _parts(statement: ast.stmt, current: bool) -> Iterator[tuple[ast.AST, bool, bool]]:
    """A simple statement whole; a compound one's headers (an if's or a while's a test)."""
    if not _blocks(statement):
        yield statement, current, False
        return
    test = isinstance(statement, (ast.If, ast.While))
    for header in _headers(statement):
        yield header, current, test


def _after(statements: list[ast.stmt]) -> Iterator[tuple[ast.AST, bool, bool]]:
    """What a block's later statements read, up to one that leaves it."""
    for statement in statements:
        if isinstance(statement, (ast.Break, ast.Continue)):
            return
        if not isinstance(statement, _DEFINITIONS):
            yield from _parts(statement, False)
        if isinstance(statement, (ast.Return, ast.Raise)):
            return


def _bound(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(statement, name, None) for name in ("body", "orelse", "finalbody")]
    found = [block for block in blocks if isinstance(block, list) and block]
    found.extend(handler.body for handler in getattr(statement, "handlers", ()) or ())
    found.extend(case.body for case in getattr(statement, "cases", ()) or ())
    return found


def _headers(statement: ast.stmt) -> list[ast.AST]:
    if isinstance(statement, (ast.If, ast.While)):
        return [statement.test]
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [statement.iter]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in statement.items]
    return []


def _in_block(block: list[ast.stmt], line: int) -> bool:
    return block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno)


def _in_blocks(blocks: list[list[ast.stmt]], line: int) -> bool:
    return any(_in_block(block, line) for block in blocks)


def _reads_in(part: ast.AST, current: bool, test: bool,
              loops: set[str]) -> Iterator[Read]:
    """The reads one executed part holds: its subscripts of a named container by a named
    key, its tests (an ``if``'s or a ``while``'s, where ``test``; a conditional
    expression's), and, on the line's own statement, the names it passes to calls.
    ``loops`` gets the names its comprehensions bind."""
    tests: list[ast.expr] = [part] if test and isinstance(part, ast.expr) else []
    for node in ast.walk(part):
        if isinstance(node, ast.comprehension):
            loops.update(_bound(node.target))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            yield from _index(node)
        elif isinstance(node, ast.IfExp):
            tests.append(node.test)
        elif isinstance(node, ast.Call) and current:
            for argument in (*node.args, *(k.value for k in node.keywords)):
                if chain_of(argument) is not None:
                    yield _read(USE_BRANCH, argument, argument, flag=True)
    for expr in tests:
        if chains_in(expr) and evaluable(expr):
            yield _read(USE_BRANCH, expr, expr)


def _index(node: ast.Subscript) -> Iterator[Read]:
    container, key = chain_of(node.value), node.slice
    if container is None or isinstance(key, ast.Slice) or not chains_in(key) \
            or not evaluable(key):
        return
    yield _read(USE_INDEX, key, node, container)


def _read(use: str, expr: ast.expr, whole: ast.expr, container: Chain = (),
          flag: bool = False) -> Read:
    return Read(use, whole.lineno, expr, ast.unparse(whole)[:120], chains_in(expr), container,
                flag)


def chain_of(node: ast.AST) -> Chain | None:
    """``("self", "cfg", "scale")`` for ``self.cfg.scale`` read (not written), else None."""
    return dotted_name(node, _CHAIN)


def chains_in(expr: ast.AST) -> tuple[Chain, ...]:
    """The dotted names an expression reads, outermost first, each once."""
    found: dict[Chain, None] = {}
    _chains(expr, found)
    return tuple(found)


def _chains(node: ast.AST, found: dict[Chain, None]) -> None:
    chain = chain_of(node)
    if chain is not None:
        found[chain] = None
        return
    for child in ast.iter_child_nodes(node):
        _chains(child, found)


# -- reading a test or a key again, safely --------------------------------------------------
class Unsafe(Exception):
    """An expression that cannot be evaluated without running the script's code."""


Lookup = Callable[[Chain], Any]
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Mod: operator.mod, ast.FloorDiv: operator.floordiv, ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_,
    ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b}
_CONTAINERS = (list, tuple, dict)
_KEYS_CHECKED = 256  # the most entries looked through for a lookup or an ``in``


def evaluate(expr: ast.AST, lookup: Lookup) -> Any:
    """The value of ``expr`` from the names ``lookup`` reads, where it takes only plain
    values (numbers, strings, booleans, None, and exact lists, tuples and dicts of them):
    never a method, an operator or a truth test of anything else (a tensor's would wait for
    the GPU). Unsafe otherwise."""
    try:
        return _value(expr, lookup)
    except Unsafe:
        raise
    except Exception as error:  # noqa: BLE001 - 1 % 0, a missing key: not evaluable
        raise Unsafe(repr(error)) from error


def _value(node: ast.AST, lookup: Lookup) -> Any:
    chain = chain_of(node)
    if chain is not None:
        return _plain_or_container(lookup(chain))
    if isinstance(node, ast.Constant):
        return _plain_or_container(node.value)
    if isinstance(node, ast.BoolOp):
        return _boolean(node, lookup)
    if isinstance(node, ast.UnaryOp):
        return _unary(node, lookup)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_plain(_value(node.left, lookup)),
                                      _plain(_value(node.right, lookup)))
    if isinstance(node, ast.Compare):
        return _compare(node, lookup)
    if isinstance(node, ast.Tuple):
        return tuple(_plain(_value(item, lookup)) for item in node.elts)
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        return _plain(item(_value(node.value, lookup), _plain(_value(node.slice, lookup))))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "len" and len(node.args) == 1 and not node.keywords:
        return len(_container(_value(node.args[0], lookup)))
    raise Unsafe(type(node).__name__)


def _boolean(node: ast.BoolOp, lookup: Lookup) -> Any:
    value: Any = None
    for item in node.values:
        value = _plain(_value(item, lookup))
        if bool(value) is isinstance(node.op, ast.Or):
            return value
    return value


def _unary(node: ast.UnaryOp, lookup: Lookup) -> Any:
    value = _plain(_value(node.operand, lookup))
    if isinstance(node.op, ast.Not):
        return not value
    if isinstance(node.op, ast.USub):
        return -value
    if isinstance(node.op, ast.UAdd):
        return +value
    raise Unsafe("unary")


def _compare(node: ast.Compare, lookup: Lookup) -> bool:
    left = _plain(_value(node.left, lookup))
    for op, right_node in zip(node.ops, node.comparators):
        right = _value(right_node, lookup)
        if type(op) not in _COMPARE:
            raise Unsafe("comparison")
        if isinstance(op, (ast.In, ast.NotIn)):
            _plain_entries(right)
        else:
            _plain(right)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


def item(container: Any, key: Any) -> Any:
    """``container[key]`` of a plain list, tuple or dict whose keys are all plain (so that
    no lookup compares a key with a tensor, which would launch a kernel)."""
    if type(container) in (list, tuple) and type(key) is int:
        return container[key]
    if type(container) is dict and len(container) <= _KEYS_CHECKED \
            and all(type(k) in PLAIN for k in container):
        return container[key]
    raise Unsafe("not a plain container")


def _plain_entries(container: Any) -> None:
    """A container ``in`` may look through: plain entries only (each is compared)."""
    if type(container) not in (*_CONTAINERS, str) or len(container) > _KEYS_CHECKED \
            or not all(type(k) in PLAIN for k in container):
        raise Unsafe("not a plain container")


def _plain(value: Any) -> Any:
    if type(value) in PLAIN or (type(value) is tuple and all(type(v) in PLAIN for v in value)):
        return value
    raise Unsafe(f"a {type(value).__name__}")


def _container(value: Any) -> Any:
    if type(value) in (*_CONTAINERS, str):
        return value
    raise Unsafe(f"a {type(value).__name__}")


def _plain_or_container(value: Any) -> Any:
    return value if type(value) in _CONTAINERS else _plain(value)


def evaluable(node: ast.AST) -> bool:
    """Whether ``node`` is made only of what :func:`evaluate` reads (whatever the names
    hold, which is settled when they are read)."""
    if chain_of(node) is not None or isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.BoolOp):
        return all(evaluable(item) for item in node.values)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)) and evaluable(node.operand)
    if isinstance(node, ast.BinOp):
        return type(node.op) in _BINARY and evaluable(node.left) and evaluable(node.right)
    if isinstance(node, ast.Compare):
        return all(type(op) in _COMPARE for op in node.ops) \
            and all(evaluable(item) for item in (node.left, *node.comparators))
    if isinstance(node, ast.Tuple):
        return all(evaluable(item) for item in node.elts)
    if isinstance(node, ast.Subscript):
        return not isinstance(node.slice, ast.Slice) and evaluable(node.value) \
            and evaluable(node.slice)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "len" and len(node.args) == 1 and not node.keywords
            and evaluable(node.args[0]))
