// SPDX-License-Identifier: Apache-2.0
// Host side of every family launcher, in one include: CUDA error translation,
// argument checks, device facts, kernel attributes and scratch workspaces --
// the runtime's per-device caches that keep device queries off the call path.
// Included by kernels/<family>/<family>.cu; host code only (no <<<>>> here).
// The runtime depends on nothing in the families, kernels/common or kernels/arch.
#pragma once

#include "kernelforge/error.hpp"
#include "cuda_check.hpp"
#include "device_facts.hpp"
#include "kernel_attributes.hpp"
#include "per_device.hpp"
#include "validate.hpp"
#include "workspace.hpp"
