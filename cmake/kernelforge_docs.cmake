# SPDX-License-Identifier: Apache-2.0
# The `docs` target: the documentation site (docs/build_site.py) into <build>/docs/site.
# Defined only where Python 3 with mkdocs is found (pip install -r docs/requirements.txt);
# not part of `all`. Run it with: cmake --build <build> --target docs
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "kernelforge: no docs target (no Python 3 interpreter)")
  return()
endif()
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import mkdocs, material"
                RESULT_VARIABLE _kf_mkdocs_missing OUTPUT_QUIET ERROR_QUIET)
if(_kf_mkdocs_missing)
  message(STATUS "kernelforge: no docs target (${Python3_EXECUTABLE} lacks mkdocs; "
                 "pip install -r docs/requirements.txt)")
  return()
endif()
add_custom_target(docs
  COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_SOURCE_DIR}/docs/build_site.py" --out "${CMAKE_BINARY_DIR}/docs"
  WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
  COMMENT "Building the documentation site into ${CMAKE_BINARY_DIR}/docs/site"
  USES_TERMINAL
  VERBATIM)
message(STATUS "kernelforge: docs target (cmake --build ... --target docs -> ${CMAKE_BINARY_DIR}/docs/site)")
