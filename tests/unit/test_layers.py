"""The package's layering, enforced: no import cycles, no upward imports, no private reach-across.

Every module of ``deteval`` is parsed with :mod:`ast` (nothing is imported), and every import in
it is read: at module level, inside functions, under ``if TYPE_CHECKING``. ``from x import y``
resolves to the module ``x.y`` when that is a module, else to ``x``. An import of ``deteval.a.b``
names only that module, not its parent packages (Python runs their ``__init__`` too, but an
``__init__`` that stays light is no layering question).

Rules:

(a) no cycle among deteval modules;
(b) a module imports its own layer's package and lower layers only: a module in layer ``L`` may
    import any module of its own top-level package (``deteval.io.coco`` -> ``deteval.io.masks``),
    any module of a layer below ``L``, and another top-level package of layer ``L`` only where
    :data:`SAME_LAYER` says so;
(c) no ``_private`` name (function, class, constant or module) is imported from another deteval
    module; a private module may be imported by the modules of its own package
    (``deteval.analysis.tide.core`` -> ``deteval.analysis.tide._kernels``); ``deteval._runtime`` is a package name.

:data:`KNOWN_VIOLATIONS` lists what is still to be fixed in files owned elsewhere; it must only
shrink (an entry that no longer occurs fails the test too, so the list stays honest).
"""

from __future__ import annotations

import ast
from pathlib import Path

import deteval

# --------------------------------------------------------------------------------------
# the layers, lowest first; a name is the first component after "deteval" ("__init__": the package)

LAYERS: tuple[tuple[str, ...], ...] = (
    # 0 base: errors, settings, containers, text, numerics, the numba runtime and start-up, progress display
    (
        "errors", "tuning", "types", "text", "numeric", "jit", "_runtime", "_startup", "rle", "progress",
        "vocabulary", "predicates", "version",
    ),  # fmt: skip
    # 1 files -> containers, and geometry: siblings, neither imports the other
    ("io", "geometry"),
    # 2 matching, and the stable sorts that matching and ranking share
    ("matching",),
    # 3 accumulation: ranking, cumulative TP/FP curves, integrators, resampling; the result types protocols build
    ("accumulation", "result"),
    # 4 protocols: data + the pipeline of the layers below
    ("protocols",),
    # 5 analyses and reports, read from results
    ("analysis",),
    # 6 the public entry points
    ("api", "pycocotools"),
    # 7 streaming, distributed and sharded evaluation, and the package's facade that offers them all
    ("evaluator", "__init__"),
    # 8 the command line
    ("cli", "__main__"),
)

LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}

# imports between different top-level names of one layer that are allowed, (importer, imported); the
# pairs form no cycle (rule (a) checks it), so within a layer they give an order
SAME_LAYER: frozenset[tuple[str, str]] = frozenset(
    {
        # 0: the kernel decorator sets numba up first and reads the thread thresholds; numeric's sums are kernels
        ("jit", "_runtime"),
        # 0: an error's message is one line of printable text
        ("errors", "text"),
        ("jit", "tuning"),
        # 0: the warm-up names each iou type's kernel group from the iou types' table
        ("jit", "vocabulary"),
        # 0: a kernel cache miss starts the compile helpers; the build compiles every recorded signature
        ("_runtime", "_startup"),
        # 0: the warm-up names a large input's kernel groups for the compile helpers
        ("jit", "_startup"),
        ("numeric", "jit"),
        # 0: the crossing test's float filter is a kernel (the DOTA reader and the quadrilateral kernels share it)
        ("predicates", "jit"),
        # 0: the RLE kernels are kernels; the containers hold masks
        ("rle", "jit"),
        ("types", "rle"),
        # 7: the package gives deteval.Evaluator (lazily: the CLI and evaluate() never import it)
        ("__init__", "evaluator"),
        # 8: python -m deteval runs the CLI
        ("__main__", "cli"),
    }
)

# private names that are package names, not private members
PUBLIC_PRIVATE_LOOKING = frozenset({"_runtime", "_startup"})

# known violations, (importer, imported module, name or None, rule): none are left, and none may be added
KNOWN_VIOLATIONS: frozenset[tuple[str, str, str | None, str]] = frozenset()

# --------------------------------------------------------------------------------------
# reading the imports

ROOT = Path(deteval.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("deteval", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(mod: str) -> bool:
    return MODULES[mod].name == "__init__.py"


def _resolve(name: str) -> str | None:
    """The deteval module ``name`` names: itself or its longest existing prefix; None outside deteval."""
    parts = name.split(".")
    if parts[0] != "deteval":
        return None
    while parts:
        cand = ".".join(parts)
        if cand in MODULES:
            return cand
        parts = parts[:-1]
    return None


def _imports(mod: str) -> list[tuple[str, str | None, int]]:
    """``(imported module, name imported from it or None, line)`` for every deteval import of ``mod``."""
    tree = ast.parse(MODULES[mod].read_text(), filename=str(MODULES[mod]))
    package = mod if _is_package(mod) else mod.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name)
                if target is not None:
                    out.append((target, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:  # a submodule
                    out.append((sub, None, node.lineno))
                    continue
                target = _resolve(base)
                if target is not None:
                    out.append((target, alias.name, node.lineno))
    return out


def _top(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _private_module(mod: str) -> str | None:
    """The first private component of a module path (the package it is private to is what precedes it)."""
    for part in mod.split(".")[1:]:
        if part.startswith("_") and not part.startswith("__") and part not in PUBLIC_PRIVATE_LOOKING:
            return part
    return None


def _violations() -> list[tuple[tuple[str, str, str | None, str], str]]:
    found = []
    for mod in MODULES:
        seen = set()
        for target, name, line in _imports(mod):
            if target == mod:
                continue
            where = f"{MODULES[mod].relative_to(ROOT.parent)}:{line}"
            what = f"{target}" + (f" ({name})" if name else "")
            src_top, dst_top = _top(mod), _top(target)
            for top in (src_top, dst_top):
                assert top in LAYER_OF, f"{top!r} ({mod} or {target}) is in no layer: add it to LAYERS"
            src_l, dst_l = LAYER_OF[src_top], LAYER_OF[dst_top]
            if src_top != dst_top:
                if dst_l > src_l:
                    key = (mod, target, None, "upward")
                    msg = f"{where}: {mod} (layer {src_l}) imports {what} from the higher layer {dst_l}"
                    if key not in seen:
                        seen.add(key)
                        found.append((key, msg))
                elif dst_l == src_l and (src_top, dst_top) not in SAME_LAYER:
                    key = (mod, target, None, "same-layer")
                    msg = (
                        f"{where}: {mod} imports {what}, another package of its layer {src_l}; "
                        "allowed only through SAME_LAYER"
                    )
                    if key not in seen:
                        seen.add(key)
                        found.append((key, msg))
            if name is not None and name.startswith("_") and not name.startswith("__"):
                key = (mod, target, name, "private")
                found.append((key, f"{where}: {mod} imports the private name {name} from {target}"))
            priv = _private_module(target)
            if priv is not None:
                owner = target[: target.index("." + priv)]
                if not (mod == owner or mod.startswith(owner + ".")):
                    key = (mod, target, None, "private")
                    found.append((key, f"{where}: {mod} imports {target}, private to {owner}"))
    return found


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each a cycle of imports."""
    graph = {m: sorted({t for t, _, _ in _imports(m) if t != m}) for m in MODULES}
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in graph:
        if m not in index:
            visit(m)
    return out


# --------------------------------------------------------------------------------------
# the tests


def test_every_module_is_in_a_layer():
    missing = sorted({_top(m) for m in MODULES} - set(LAYER_OF))
    assert not missing, f"modules in no layer: {missing}; add them to LAYERS in {__file__}"


def test_no_import_cycles():
    cycles = _cycles()
    assert not cycles, "import cycles among deteval modules:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_imports_follow_the_layers():
    found = _violations()
    new = [msg for key, msg in found if key not in KNOWN_VIOLATIONS]
    assert not new, "imports that break the layering (see LAYERS in tests/unit/test_layers.py):\n" + "\n".join(new)


def test_known_violations_still_occur():
    """An entry fixed must leave KNOWN_VIOLATIONS, so the list only ever shrinks."""
    keys = {key for key, _ in _violations()}
    gone = sorted(KNOWN_VIOLATIONS - keys)
    assert not gone, f"fixed: remove these from KNOWN_VIOLATIONS: {gone}"


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    """The reading itself: a function-level import and ``from deteval.x import y`` resolve to modules."""
    imports = _imports("deteval.evaluator.core")
    assert ("deteval.evaluator.distributed", "sync", imports[0][2]) in {(t, n, imports[0][2]) for t, n, _ in imports}
    assert any(t == "deteval.evaluator.state" for t, _, _ in imports)
    assert _resolve("deteval.protocols.coco.CocoParams") == "deteval.protocols.coco"
    assert _private_module("deteval.analysis.tide._kernels") == "_kernels"
    assert _private_module("deteval._runtime.pool") is None


# --------------------------------------------------------------------------------------
# the door: outside deteval/protocols/, every protocol is reached through the registry
# (deteval.protocols.get(name)) and asked for what it provides; no module compares a protocol's name
# or imports a named protocol's module. Only the registry and the protocol-independent modules below
# may be imported from outside.

DOOR = frozenset(
    {
        "deteval.protocols",  # the registry
        "deteval.protocols.base",  # the interface: Protocol, Option
        "deteval.protocols.streaming",  # the streaming capability's data
        "deteval.protocols.replay",  # the replay capability
        "deteval.protocols.presets",  # preset files
    }
)


def _protocol_names() -> set[str]:
    from deteval import protocols

    return set(protocols.available())


def _named_protocol_module(mod: str) -> bool:
    """A module of ``deteval.protocols`` that is not the door (``coco``, ``coco_params``, ``voc`` ...)."""
    return mod.startswith("deteval.protocols.") and mod not in DOOR


def _mentions_protocol(node: ast.AST) -> bool:
    """``protocol``, ``args.protocol``, ``result.protocol``, ``self.protocol_name`` ..."""
    if isinstance(node, ast.Name):
        return "protocol" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "protocol" in node.attr.lower()
    return False


def _protocol_constants(node: ast.AST, names: set[str]) -> bool:
    """A protocol's name as a literal, or a tuple, list or set of literals holding one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in names
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_protocol_constants(e, names) for e in node.elts)
    return False


def _door_violations_in(mod: str, source: str, names: set[str]) -> list[str]:
    """What in ``source`` (module ``mod``) goes around the registry: a comparison of a protocol with a
    protocol's name (or a module-level collection of such names), an import of a named protocol module."""
    if mod == "deteval.protocols" or mod.startswith("deteval.protocols."):
        return []
    tree = ast.parse(source)
    named_lists = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
        and isinstance(node.value, ast.Tuple | ast.List | ast.Set) and _protocol_constants(node.value, names)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_mentions_protocol(o) for o in operands) and any(
                _protocol_constants(o, names) or (isinstance(o, ast.Name) and o.id in named_lists) for o in operands
            ):
                found.append(f"{mod}:{node.lineno}: compares a protocol with a protocol's name")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            base = node.module if isinstance(node, ast.ImportFrom) and not node.level else None
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if base is not None:
                targets += [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                if _named_protocol_module(t) and (t in MODULES or t.rpartition(".")[0] == "deteval.protocols"):
                    found.append(f"{mod}:{node.lineno}: imports the named protocol module {t}")
    return found


def test_protocols_are_reached_through_the_registry():
    names = _protocol_names()
    found = [v for mod, path in MODULES.items() for v in _door_violations_in(mod, path.read_text(), names)]
    assert not found, "reach the protocol through deteval.protocols.get(name) and its capabilities:\n" + "\n".join(
        found
    )


def test_the_door_rule_sees_names_and_imports():
    """The rule itself: each way around the registry is seen, the registry's own way is not."""
    names = {"coco", "lvis"}
    bad = {
        "if args.protocol != 'coco': pass": "compares",
        "ok = result.protocol in ('coco', 'lvis')": "compares",
        "REPLAYED = ('coco', 'lvis')\nok = result.protocol not in REPLAYED": "compares",
        "from deteval.protocols.coco import match": "imports",
        "from deteval.protocols import coco_summary": "imports",
        "import deteval.protocols.lvis": "imports",
    }
    for source, what in bad.items():
        found = _door_violations_in("deteval.analysis.x", source, names)
        assert len(found) == 1 and what in found[0], (source, found)
    good = (
        "from deteval import protocols\nproto = protocols.get(result.protocol)",
        "from deteval.protocols.base import Protocol",
        "fmt = 'coco' if path.endswith('.json') else 'voc'",
        "if iou_type == 'bbox': pass",
    )
    for source in good:
        assert _door_violations_in("deteval.analysis.x", source, names) == [], source
    # inside the package, protocols build on one another
    assert _door_violations_in("deteval.protocols.voc", "from deteval.protocols.coco import x", names) == []
