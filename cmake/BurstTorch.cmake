# What building against PyPI's libtorch (torch/share/cmake, scripts/setup.sh) needs beyond
# find_package(Torch).
#
# One fmt. The wheel ships fmt 12's headers in torch/include, which torch's targets add as a
# system include directory; Debian's fmt 9 (the libfmt every burst library links) lives in
# /usr/include, which the compiler searches last. Without this, a file that includes libtorch
# would compile against fmt 12's headers and link fmt 9's library. A folder in the build tree
# that holds only Debian's fmt, searched before torch's, makes every file see the fmt it links.
get_target_property(_burst_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
find_path(_burst_fmt_headers fmt/format.h PATHS ${_burst_fmt_include} NO_DEFAULT_PATH)
if(NOT _burst_fmt_headers)
  message(FATAL_ERROR "burst: fmt's headers not found in '${_burst_fmt_include}'")
endif()
set(_burst_fmt_first "${CMAKE_BINARY_DIR}/fmt-first")
file(MAKE_DIRECTORY "${_burst_fmt_first}")
file(CREATE_LINK "${_burst_fmt_headers}/fmt" "${_burst_fmt_first}/fmt" SYMBOLIC)
include_directories(BEFORE SYSTEM "${_burst_fmt_first}")

# The CUDA build. BURST_CUDA: AUTO (the default) builds it when libtorch is a CUDA build and
# torch's CMake found the CUDA toolkit (nvcc, headers); ON requires both; OFF builds for the
# CPU only. It needs no GPU to build: CI compiles and links it and runs its CPU tests.
# NCCL comes with it when libtorch has c10d's ProcessGroupNCCL (USE_C10D_NCCL).
burst_tristate(BURST_CUDA "Build the CUDA runtime and profiler")
set(_burst_cuda "${_BURST_CUDA}")
set(_burst_torch_has_cuda FALSE)
if(CAFFE2_USE_CUDA AND CUDAToolkit_FOUND)
  set(_burst_torch_has_cuda TRUE)
endif()
if(_burst_cuda STREQUAL "ON" AND NOT _burst_torch_has_cuda)
  message(FATAL_ERROR "BURST_CUDA=ON needs a CUDA libtorch and the CUDA toolkit; libtorch CUDA: "
                      "'${CAFFE2_USE_CUDA}', toolkit found: '${CUDAToolkit_FOUND}'")
endif()
set(BURST_CUDA_BUILT 0)  # read by apps/burst (burst --version)
set(BURST_NCCL_BUILT 0)
if(_burst_torch_has_cuda AND NOT _burst_cuda STREQUAL "OFF")
  set(BURST_CUDA_BUILT 1)
  get_target_property(_burst_torch_cuda_definitions torch_cuda INTERFACE_COMPILE_DEFINITIONS)
  if("USE_C10D_NCCL" IN_LIST _burst_torch_cuda_definitions)
    set(BURST_NCCL_BUILT 1)
  endif()
endif()
message(STATUS "burst: CUDA build: ${BURST_CUDA_BUILT} (NCCL: ${BURST_NCCL_BUILT})")

# Every burst target that uses libtorch links this: libtorch itself and the two switches, the
# same in every file (so no header means two things in one program).
#
# libstdc++ first. PyPI's libtorch.so carries (and exports) its own copies of some of
# std::filesystem, built for a newer libstdc++ than Debian 12's; a program whose libtorch.so
# comes before libstdc++.so in its list of libraries binds std::filesystem::remove_all to
# that copy, which crashes (it calls a function this libstdc++ lacks). Naming libstdc++
# before libtorch puts it first in the dynamic linker's search order.
add_library(burst_torch INTERFACE)
target_link_libraries(burst_torch INTERFACE stdc++ ${TORCH_LIBRARIES})
target_compile_definitions(burst_torch INTERFACE BURST_CUDA_BUILT=${BURST_CUDA_BUILT}
                                                 BURST_NCCL_BUILT=${BURST_NCCL_BUILT})
