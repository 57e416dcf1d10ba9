# SPDX-License-Identifier: Apache-2.0
# GoogleTest (tests) and Google Benchmark (benchmarks): the installed packages
# when found (Debian/Ubuntu: googletest libgtest-dev libbenchmark-dev; CI
# installs those), otherwise downloaded and built by CMake at configure time,
# pinned by version and hash, so a fresh machine with only the CUDA toolkit and
# CMake needs no manual step. -DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=NEVER forces
# the download; an offline machine needs the packages installed.
include(FetchContent)

macro(kernelforge_require_googletest)
  if(NOT TARGET GTest::gtest)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    FetchContent_Declare(googletest
      URL https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz
      URL_HASH SHA256=8ad598c73ad796e0d8280b082cebd82a630d73e73cd3c70057938a6501bba5d7
      DOWNLOAD_EXTRACT_TIMESTAMP TRUE
      FIND_PACKAGE_ARGS NAMES GTest)
    FetchContent_MakeAvailable(googletest)
    if(googletest_FOUND OR GTest_FOUND)
      message(STATUS "kernelforge: GoogleTest: installed package ${GTest_DIR}")
    else()
      message(STATUS "kernelforge: GoogleTest: not installed; built from googletest v1.14.0 (FetchContent)")
    endif()
  endif()
endmacro()

macro(kernelforge_require_benchmark)
  if(NOT TARGET benchmark::benchmark)
    set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_GTEST_TESTS OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_WERROR OFF CACHE BOOL "" FORCE)
    FetchContent_Declare(benchmark
      URL https://github.com/google/benchmark/archive/refs/tags/v1.8.3.tar.gz
      URL_HASH SHA256=6bc180a57d23d4d9515519f92b0c83d61b05b5bab188961f36ac7b06b0d9e9ce
      DOWNLOAD_EXTRACT_TIMESTAMP TRUE
      FIND_PACKAGE_ARGS NAMES benchmark)
    FetchContent_MakeAvailable(benchmark)
    if(benchmark_FOUND)
      message(STATUS "kernelforge: Google Benchmark: installed package ${benchmark_DIR}")
    else()
      message(STATUS "kernelforge: Google Benchmark: not installed; built from benchmark v1.8.3 (FetchContent)")
    endif()
  endif()
endmacro()
