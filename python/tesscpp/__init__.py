"""tesscpp: call Tesseracts from Python through a C++ client.

``tesscpp.Tesseract`` mirrors ``tesseract_core.Tesseract`` (from_url,
from_source, endpoints, with_encoding, ...) and adds ``from_library`` for C++
components loaded into this process. ``tesscpp.torch.apply_tesseract`` makes
any Tesseract a differentiable PyTorch operation.
"""

from ._tesseract import RequestedEncoding, ServerCapabilities, Tesseract

__version__ = "0.1.0"

__all__ = ["RequestedEncoding", "ServerCapabilities", "Tesseract", "__version__"]
