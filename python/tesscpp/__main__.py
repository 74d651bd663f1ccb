"""``python -m tesscpp`` and the ``tesscpp`` command pip puts on PATH.

``--cmake-dir``, ``--include-dir`` and ``--pkgconfig-dir`` print where the SDK
inside this package is; anything else runs the package's tesscpp CLI with the
same arguments (``tesscpp serve lib.so``, ``tesscpp init``, ...).
"""

from __future__ import annotations

import os
import sys

from . import _sdk

_PATHS = {"--cmake-dir": _sdk.cmake_dir, "--include-dir": _sdk.include_dir, "--pkgconfig-dir": _sdk.pkgconfig_dir}


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 1 and args[0] in _PATHS:
        print(_PATHS[args[0]]())
        return
    cli = _sdk.executable()
    # A tesseract_api.py is hosted by this interpreter (docs/python-host.md §1).
    os.environ.setdefault("TESSCPP_PYTHON", sys.executable)
    # exec, not a child: signals, the exit status and stdio are the CLI's own.
    os.execv(cli, [cli, *args])


if __name__ == "__main__":
    main()
