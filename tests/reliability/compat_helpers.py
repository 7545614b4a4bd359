"""The helpers and S3 fixtures of tests/compat/conftest.py, imported (never
copied) for the reliability tests.

pytest imports every conftest.py that is not inside a package under the one
module name `conftest`, so a plain `import conftest` from here would get
whichever conftest pytest loaded last, and a conftest.py of this folder would
take that name from tests/compat's own modules. This module therefore loads
tests/compat/conftest.py by its path: the module pytest already loaded when
`conftest` is that file, otherwise the file itself under its own name."""

import importlib.util
import pathlib
import sys

_PATH = pathlib.Path(__file__).resolve().parents[1] / "compat" / "conftest.py"


def _load():
    loaded = sys.modules.get("conftest")
    if loaded is not None and pathlib.Path(getattr(loaded, "__file__", "")).resolve() == _PATH:
        return loaded
    name = "timelake_compat_conftest"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


compat = _load()

BIN = compat.BIN
run_cli = compat.run_cli
cli_query = compat.cli_query
referenced_files = compat.referenced_files
s3_server = compat.s3_server
s3_warehouse = compat.s3_warehouse
running_s3_server = compat.running_s3_server
