# Install rules: `cmake --install build --prefix P` (component runtime, the default) lays steadyocr out as
#   P/bin/steadyocr, P/bin/steadyocr-doctor          (RUNPATH $ORIGIN/../lib/steadyocr)
#   P/lib/steadyocr/libso_core.so, libso_graph.so    (the engine's shared layers)
#   P/lib/steadyocr/libsteadyocr_cuda13.so           (the CUDA plugins; the binary looks for them there and
#   P/lib/steadyocr/libsteadyocr_cuda11.so            picks the newest the driver runs; 11: scripts/build_cuda11.sh)
#   P/lib/steadyocr/libsteadyocr_vulkan.so           (the Vulkan plugin: the vulkan rung, no CUDA needed)
#   P/lib/libsteadyocr.so.0 + P/include/steadyocr.h  (the C API)
# and `--component python` (only when named) lays out the Python package the wheel carries (setup.py runs it):
#   P/steadyocr/_native.*.so                          (RUNPATH $ORIGIN/lib/steadyocr)
#   P/steadyocr/bin/steadyocr                         (the worker rungs and the doctor's layers 3-4 run it)
#   P/steadyocr/lib/steadyocr/*.so
# Relative RUNPATHs only, so either tree can be moved. The bindings find the binary next to themselves
# (src/bindings/common/session.cpp) before the build tree's path compiled into them.
include(GNUInstallDirs)

set(SO_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR}/steadyocr)
set_target_properties(steadyocr steadyocr-doctor PROPERTIES INSTALL_RPATH "$ORIGIN/../${SO_INSTALL_LIBDIR}")
set_target_properties(so_core so_graph PROPERTIES INSTALL_RPATH "$ORIGIN")
set_target_properties(steadyocr_c PROPERTIES INSTALL_RPATH "$ORIGIN/steadyocr")
set(SO_ENGINE_TARGETS so_core so_graph)
if(TARGET steadyocr_cuda)
  # $ORIGIN for the engine's layers; the toolkit's library folder (cuDNN, cuBLAS) as the build found it.
  set_target_properties(steadyocr_cuda PROPERTIES INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)
  list(APPEND SO_ENGINE_TARGETS steadyocr_cuda)
endif()
if(TARGET steadyocr_vulkan)
  # Needs only the engine's layers: libvulkan.so.1 is loaded at run time from the system.
  set_target_properties(steadyocr_vulkan PROPERTIES INSTALL_RPATH "$ORIGIN")
  list(APPEND SO_ENGINE_TARGETS steadyocr_vulkan)
endif()

install(TARGETS steadyocr steadyocr-doctor RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS ${SO_ENGINE_TARGETS} LIBRARY DESTINATION ${SO_INSTALL_LIBDIR} COMPONENT runtime)
# The CUDA 11.8 plugin of scripts/build_cuda11.sh, copied into this build folder, goes beside the CUDA 13 one.
install(FILES ${CMAKE_BINARY_DIR}/libsteadyocr_cuda11.so DESTINATION ${SO_INSTALL_LIBDIR} COMPONENT runtime OPTIONAL)
install(TARGETS steadyocr_c LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(FILES ${STEADYOCR_SOURCE_ROOT}/include/steadyocr.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT runtime)

# Everything the Python package needs, built by one target (setup.py builds it, then installs the component).
set(SO_PYTHON_PACKAGE_TARGETS steadyocr ${SO_ENGINE_TARGETS})
if(TARGET steadyocr_python)
  set_target_properties(steadyocr_python PROPERTIES INSTALL_RPATH "$ORIGIN/lib/steadyocr")
  install(TARGETS steadyocr_python LIBRARY DESTINATION steadyocr COMPONENT python EXCLUDE_FROM_ALL)
  install(DIRECTORY ${STEADYOCR_SOURCE_ROOT}/python/steadyocr/ DESTINATION steadyocr COMPONENT python
          EXCLUDE_FROM_ALL FILES_MATCHING PATTERN "*.py")
  install(TARGETS steadyocr RUNTIME DESTINATION steadyocr/bin COMPONENT python EXCLUDE_FROM_ALL)
  install(TARGETS ${SO_ENGINE_TARGETS} LIBRARY DESTINATION steadyocr/lib/steadyocr COMPONENT python EXCLUDE_FROM_ALL)
  install(FILES ${CMAKE_BINARY_DIR}/libsteadyocr_cuda11.so DESTINATION steadyocr/lib/steadyocr COMPONENT python
          EXCLUDE_FROM_ALL OPTIONAL)
  list(APPEND SO_PYTHON_PACKAGE_TARGETS steadyocr_python steadyocr_python_files)
endif()
add_custom_target(steadyocr_python_package)
add_dependencies(steadyocr_python_package ${SO_PYTHON_PACKAGE_TARGETS})
