"""Where the C++ SDK inside this package is: headers, libtesscpp.so, the CMake
package and the tesscpp CLI, as pybind11 and nanobind expose their own
(``cmake_dir()`` for ``-DCMAKE_PREFIX_PATH``)."""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent


def _existing(path: Path, what: str) -> str:
    if not path.exists():
        raise FileNotFoundError(
            f"{what} is not in this tesscpp package ({path} is missing): it is installed by "
            "`pip install ./python`; a build tree's package has no SDK"
        )
    return str(path)


def cmake_dir() -> str:
    """The folder holding tesscppConfig.cmake: pass it as ``-Dtesscpp_DIR`` or
    put it on ``CMAKE_PREFIX_PATH``."""
    return _existing(_ROOT / "lib" / "cmake" / "tesscpp", "The CMake package")


def include_dir() -> str:
    """The folder holding ``tesscpp/*.h``."""
    return _existing(_ROOT / "include", "The C++ headers")


def pkgconfig_dir() -> str:
    """The folder holding tesscpp.pc, for ``PKG_CONFIG_PATH``."""
    return _existing(_ROOT / "lib" / "pkgconfig", "The pkg-config file")


def executable() -> str:
    """The tesscpp CLI inside this package."""
    return _existing(_ROOT / "bin" / "tesscpp", "The tesscpp CLI")
