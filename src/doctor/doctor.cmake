# Build pieces of the doctor beyond the so_doctor layer library (included from src/CMakeLists.txt).

# The knowledge base is data in the repo (src/doctor/knowledge_base.json), embedded into so_doctor at configure
# time so the binary needs no data file at run time (the device bundle carries only bin/ and lib/). CMake re-runs
# when the JSON changes; file(CONFIGURE) rewrites the header only when its content changes.
set(SO_KB_JSON ${CMAKE_CURRENT_LIST_DIR}/knowledge_base.json)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SO_KB_JSON})
file(READ ${SO_KB_JSON} SO_KB_TEXT)
string(FIND "${SO_KB_TEXT}" ")so_kb\"" SO_KB_BAD)
if(NOT SO_KB_BAD EQUAL -1)
  message(FATAL_ERROR "knowledge_base.json must not contain the raw-string terminator )so_kb\"")
endif()
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/doctor/knowledge_base_json.h
     CONTENT "// Generated from src/doctor/knowledge_base.json by doctor.cmake: do not edit.\n#pragma once\nnamespace steadyocr::doctor {\ninline constexpr const char kKnowledgeBaseJson[] = R\"so_kb(@SO_KB_TEXT@)so_kb\";\n}\n"
     @ONLY)
if(TARGET so_doctor)
  target_include_directories(so_doctor PRIVATE ${CMAKE_BINARY_DIR}/generated)
endif()
