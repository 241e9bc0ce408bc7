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
    # cuDNN is loaded at run time (src/backends/cuda/cudnn_api.h): the build needs only its header, cudnn.h (the
    # C API of cuDNN 9, the same for every CUDA major). STEADYOCR_CUDNN_INCLUDE names its folder where the toolkit's
    # include folder does not hold it (the CUDA 11.8 plugin built with Debian's toolkit: docs/COMPATIBILITY.md).
    find_path(CUDNN_INCLUDE cudnn.h HINTS ${STEADYOCR_CUDNN_INCLUDE} ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
    if(CUDAToolkit_FOUND AND CUDNN_INCLUDE)
      set(STEADYOCR_HAVE_CUDA ON)
    endif()
  endif()
  if(STEADYOCR_CUDA STREQUAL "ON" AND NOT STEADYOCR_HAVE_CUDA)
    message(FATAL_ERROR "STEADYOCR_CUDA=ON but no CUDA toolkit with the cuDNN header was found (looked for nvcc "
                        "and cudnn.h; -DSTEADYOCR_CUDNN_INCLUDE=DIR names the folder of cudnn.h)")
  endif()
endif()
if(STEADYOCR_HAVE_CUDA)
  # One plugin per CUDA major, side by side: libsteadyocr_cuda13.so, libsteadyocr_cuda11.so (runtime/cuda_plugin.h
  # picks the newest the driver runs).
  string(REGEX MATCH "^[0-9]+" STEADYOCR_CUDA_MAJOR "${CMAKE_CUDA_COMPILER_VERSION}")
  message(STATUS "steadyocr: CUDA plugin ON: libsteadyocr_cuda${STEADYOCR_CUDA_MAJOR}.so (nvcc "
                 "${CMAKE_CUDA_COMPILER_VERSION}, cudnn.h in ${CUDNN_INCLUDE}, SASS ${STEADYOCR_CUDA_ARCHS})")
else()
  message(STATUS "steadyocr: CUDA plugin OFF")
endif()
