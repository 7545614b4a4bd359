#!/usr/bin/env python3
# Copyright 2026 The Timelake Authors. Apache-2.0.
"""Checks that dependencies in the tree point one way.

C++: each folder of src/timelake/ is a stage of the data's path, and a file
may include only headers of its own stage or of lower ones (the order is
STAGES below; src/README.md says what each holds). The public headers
(include/timelake/) and the C ABI (timelake_platform.h) are declarations
that every stage may include. A unit test may also include the test helpers
(testing/) and the stages below its own.

Rust: the `use crate::<module>` imports between the modules of rust/src form
no cycle (tests left out: tests.rs and each file's #[cfg(test)] module).

Prints every violation and exits 1 when there is one. Run by `make test`.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Lowest first. `testing` holds test helpers only: sources never include it.
STAGES = [
    "util",
    "format",
    "settings",
    "storage",
    "versions",
    "write",
    "state",
    "commit",
    "read",
    "maintain",
    "rollup",
    "upgrade",
    "api",
    "rest",
    "cli",
]
TEST_ONLY = {"testing"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"timelake/([a-z_]+)/[^"]+"', re.M)


def check_cpp():
    errors = []
    src = ROOT / "src" / "timelake"
    folders = {p.name for p in src.iterdir() if p.is_dir()}
    for unknown in sorted(folders - set(STAGES) - TEST_ONLY):
        errors.append(f"src/timelake/{unknown}/: a folder that is not a stage in "
                      "scripts/check_layers.py (add it to STAGES in its place)")
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        stage = path.relative_to(src).parts[0]
        is_test = path.name.endswith("_test.cc") or stage in TEST_ONLY
        if stage not in STAGES and stage not in TEST_ONLY:
            continue
        level = STAGES.index(stage) if stage in STAGES else len(STAGES)
        text = path.read_text(encoding="utf-8")
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{path.relative_to(ROOT)}:{line}"
            if target in TEST_ONLY:
                if not is_test:
                    errors.append(f"{where}: includes test helpers ({target}/)")
                continue
            if target not in STAGES:
                continue  # a public header or a file of no stage
            if STAGES.index(target) > level and not is_test:
                errors.append(f"{where}: {stage}/ includes {target}/, a higher stage")
    return errors


USE = re.compile(r"\buse\s+crate::(?:\{([^}]*)\}|([a-z_0-9]+))")


def check_rust():
    errors = []
    src = ROOT / "rust" / "src"
    graph = {}
    for path in sorted(src.glob("*.rs")):
        module = path.stem
        if module == "tests":
            continue  # the crate's tests (cfg(test)) may use every module
        # A file's own test module (at its end, after #[cfg(test)]) too.
        text = path.read_text(encoding="utf-8").split("#[cfg(test)]")[0]
        deps = set()
        for m in USE.finditer(text):
            names = m.group(1).split(",") if m.group(1) else [m.group(2)]
            for n in names:
                n = n.strip().split("::")[0]
                if n and n != module:
                    deps.add(n)
        graph[module] = deps
    # Cycles by depth-first search; each reported once, from its smallest name.
    seen_cycles = set()

    def visit(node, stack, on_stack):
        for dep in sorted(graph.get(node, ())):
            if dep not in graph:
                continue
            if dep in on_stack:
                cycle = stack[stack.index(dep):]
                start = cycle.index(min(cycle))
                key = tuple(cycle[start:] + cycle[:start])
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    errors.append("rust/src: import cycle " +
                                  " -> ".join(key + (key[0],)))
                continue
            if len(stack) < len(graph):
                stack.append(dep)
                on_stack.add(dep)
                visit(dep, stack, on_stack)
                on_stack.discard(dep)
                stack.pop()

    for module in sorted(graph):
        visit(module, [module], {module})
    return errors


def main():
    errors = check_cpp() + check_rust()
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violations")
        return 1
    print("check_layers: no include from a lower stage to a higher one, no Rust import cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
