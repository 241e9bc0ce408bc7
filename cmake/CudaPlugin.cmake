# Decides whether the CUDA plugin is built. The main binary never links CUDA either way.
set(STEADYOCR_HAVE_CUDA OFF)
if(NOT STEADYOCR_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # Debian 12's CMake 3.25.1 FindCUDAToolkit sets a property on CUDA::nvToolsExt without checking that the
    # target exists; CUDA 12.9+ no longer ships nvToolsExt, so configuring fails ("could not find TARGET
    # CUDA::nvToolsExt"). That branch only runs when the project's minimum CMake version is >= 3.25: look the
    # toolkit up as a 3.24 project would, then restore the real minimum.
    set(_so_cmake_min ${CMAKE_MINIMUM_REQUIRED_VERSION})
    set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
    find_package(CUDAToolkit)
    set(CMAKE_MINIMUM_REQUIRED_VERSION ${_so_cmake_min})
    find_library(CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(CUDAToolkit_FOUND AND CUDNN_LIB AND CUDNN_INCLUDE)
      set(STEADYOCR_HAVE_CUDA ON)
    endif()
  endif()
  if(STEADYOCR_CUDA STREQUAL "ON" AND NOT STEADYOCR_HAVE_CUDA)
    message(FATAL_ERROR "STEADYOCR_CUDA=ON but no CUDA toolkit with cuDNN was found (looked for nvcc, cudnn.h, libcudnn)")
  endif()
endif()
message(STATUS "steadyocr: CUDA plugin ${STEADYOCR_HAVE_CUDA}")
