# The convolution family's launchers (absolute paths, appended to the library's sources).
list(APPEND KERNELFORGE_SOURCES
  "${CMAKE_CURRENT_LIST_DIR}/filter2d.cu"
  "${CMAKE_CURRENT_LIST_DIR}/conv2d.cu")
