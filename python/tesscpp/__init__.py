"""tesscpp: call Tesseracts from Python through a C++ client.

``tesscpp.Tesseract`` mirrors ``tesseract_core.Tesseract`` (from_url,
from_image, from_source, endpoints, with_encoding, ...) and adds ``from_library`` for C++
components loaded into this process. ``tesscpp.torch.apply_tesseract`` makes
any Tesseract a differentiable PyTorch operation. CUDA arrays a Tesseract
returns over the cuda_ipc transport are ``tesscpp.DeviceArray`` objects, which
frameworks adopt through DLPack or the CUDA array interface. The C++ SDK
installed with the package is found with ``tesscpp.cmake_dir()`` (or
``python -m tesscpp --cmake-dir``).
"""

from ._endpoint_calls import ForwardReuse
from ._sdk import cmake_dir
from ._tesscpp import DeviceArray
from ._tesseract import ContainerInfo, RequestedEncoding, ServerCapabilities, Tesseract

__version__ = "0.1.0"

__all__ = [
    "ContainerInfo",
    "DeviceArray",
    "ForwardReuse", "RequestedEncoding", "ServerCapabilities", "Tesseract", "__version__", "cmake_dir"]
