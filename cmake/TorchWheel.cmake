# LibTorch taken straight from pip's PyTorch package (the `torch/` folder of a wheel or of a
# site-packages), without its CMake config: TorchConfig.cmake of a CUDA wheel insists on a CUDA
# toolkit with nvcc (Caffe2's public/cuda.cmake enables the CUDA language), which a GPU
# workstation running PyTorch usually lacks and which Quantscope never uses (it compiles no
# kernels; it only needs ATen's headers and the libraries). Defines what find_package(Torch) would:
# TORCH_LIBRARIES, TORCH_INCLUDE_DIRS, the imported target torch_cuda when the wheel has CUDA and
# the CUDA runtime it needs is beside it, and Torch_DIR/Torch_VERSION for messages.
#
#   -DQS_TORCH_WHEEL=/path/to/site-packages/torch   (scripts/torch-wheel.sh prints one)
set(_wheel "${QS_TORCH_WHEEL}")
if(NOT EXISTS "${_wheel}/lib/libtorch_cpu.so" OR NOT EXISTS "${_wheel}/include/ATen/ATen.h")
  message(FATAL_ERROR "QS_TORCH_WHEEL='${_wheel}' is not a PyTorch package folder "
                      "(expected lib/libtorch_cpu.so and include/ATen/ATen.h in it)")
endif()
set(Torch_DIR "${_wheel}")
# The version macros: torch/headeronly/version.h from 2.9 on, torch/version.h before.
set(_version_h "${_wheel}/include/torch/headeronly/version.h")
if(NOT EXISTS "${_version_h}")
  set(_version_h "${_wheel}/include/torch/csrc/api/include/torch/version.h")
endif()
file(STRINGS "${_version_h}" _version_lines
     REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX MATCH "TORCH_VERSION_${_part} ([0-9]+)" _m "${_version_lines}")
  set(_torch_${_part} "${CMAKE_MATCH_1}")
endforeach()
set(Torch_VERSION "${_torch_MAJOR}.${_torch_MINOR}.${_torch_PATCH}")

# The wheel's own libraries name their CUDA runtime through RPATH $ORIGIN/../../nvidia/*/lib (the
# nvidia-* packages beside torch in site-packages); libtorch_cpu itself needs libcudart and
# libcupti (its profiler), so those folders are searched at link time too.
file(GLOB _nvidia_libs LIST_DIRECTORIES true "${_wheel}/../nvidia/*/lib")

function(_qs_wheel_library target file)
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${_wheel}/lib/${file}")
endfunction()
_qs_wheel_library(c10 libc10.so)
_qs_wheel_library(torch_cpu libtorch_cpu.so)
# Not libtorch.so: it is a shim that needs libtorch_cuda (and so cuBLAS, cuDNN, NCCL) even where
# only the CPU is used; Quantscope calls ATen (libtorch_cpu) and nothing of torch:: but headers.

add_library(torch INTERFACE IMPORTED GLOBAL)
set(TORCH_INCLUDE_DIRS "${_wheel}/include" "${_wheel}/include/torch/csrc/api/include")
# The package's C++ ABI, as its own config states it in TORCH_CXX_FLAGS (2.x releases that only
# ship the new ABI no longer state it). Qt 6 from Debian uses the new ABI; a LibTorch with the old
# one (pip wheels before 2.7) cannot share std::string with it.
file(READ "${_wheel}/share/cmake/Torch/TorchConfig.cmake" _torch_config)
if(_torch_config MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  message(FATAL_ERROR "QS_TORCH_WHEEL: the PyTorch at '${_wheel}' is built with the pre-C++11 "
                      "std::string ABI; Qt 6 needs the new one: use PyTorch 2.7 or later")
endif()
set_target_properties(torch PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
  INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1"
  INTERFACE_LINK_LIBRARIES "torch_cpu;c10")
foreach(_dir IN LISTS _nvidia_libs)
  set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:-rpath-link,${_dir}")
endforeach()
# LibTorch 2.x headers are C++20 from some release on: its own config then asks for cxx_std_20,
# and so do we (the code base is C++17 and also compiles as C++20).
if(_torch_config MATCHES "cxx_std_20")
  target_compile_features(torch INTERFACE cxx_std_20)
endif()
set(TORCH_LIBRARIES torch)

# CUDA when the package has libtorch_cuda (scripts/torch-wheel.sh's CPU-only unpacking leaves it
# out). Its CUDA libraries are found at link and load time through its own RPATH (pip's nvidia-*
# packages) or the system's library path (a PyTorch built against /usr/local/cuda).
if(EXISTS "${_wheel}/lib/libtorch_cuda.so")
  _qs_wheel_library(c10_cuda libc10_cuda.so)
  _qs_wheel_library(torch_cuda libtorch_cuda.so)
  set_property(TARGET torch_cuda PROPERTY INTERFACE_LINK_LIBRARIES c10_cuda)
endif()
message(STATUS "LibTorch ${Torch_VERSION} from the PyTorch package at ${_wheel}")
