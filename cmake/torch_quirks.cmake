# What LibTorch's CMake config needs to run without warnings, set before find_package(Torch) by lmzoo's build and
# by its installed package (lmzoo-config.cmake).
# Debian 13's TorchConfig.cmake asks for a static kineto library that the package does not ship and warns when
# it is missing. lmzoo never links kineto: when none is found, a generator expression that expands to nothing
# stands in for it.
find_library(kineto_LIBRARY kineto)
if(NOT kineto_LIBRARY)
  set(kineto_LIBRARY "$<0:kineto>" CACHE STRING "kineto (not used by lmzoo)" FORCE)
endif()
# A CUDA LibTorch's Caffe2 config (2.x: public/cuda.cmake) hashes libnvrtc.so by running `Python::Interpreter` with
# execute_process, which takes no target names, and warns "Failed to compute shorthash" every time; the hash only
# names LibTorch's own nvrtc stub. Setting CUDA_NVRTC_SHORTHASH here, to the value it would compute, makes it skip
# that step. A CPU LibTorch has no CUDA toolkit and no nvrtc, so nothing is set.
find_library(LMZOO_NVRTC_LIBRARY nvrtc HINTS ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES lib64 lib)
if(LMZOO_NVRTC_LIBRARY AND NOT CUDA_NVRTC_SHORTHASH)
  file(SHA256 "${LMZOO_NVRTC_LIBRARY}" lmzoo_nvrtc_sha256)
  string(SUBSTRING "${lmzoo_nvrtc_sha256}" 0 8 lmzoo_nvrtc_shorthash)
  set(CUDA_NVRTC_SHORTHASH "${lmzoo_nvrtc_shorthash}" CACHE STRING "the first 8 hex digits of libnvrtc.so's SHA-256")
endif()
