// SPDX-License-Identifier: Apache-2.0
// The translation unit that builds the tests' precompiled header
// (tests/CMakeLists.txt, KERNELFORGE_TEST_PCH); it has no code of its own.
