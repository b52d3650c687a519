// Late inputs: a call whose inputs are written by a kernel before it in the same stream that
// lets it start early and finishes late (harness/cuda/late_inputs.cu), as a training step's
// optimizer or the layer before hands a norm its operands. A kernel that reads an input before
// its programmatic-dependent-launch wait reads stale bytes (0xff) there. CUDA plugins only: the
// late writer is a library built with NORMCHECK_ENABLE_CUDA, beside the shipped plugins.
#pragma once

#include <cstddef>
#include <string>

#include "normcheck/kernel.hpp"

namespace nc::harness::late_inputs {

/// "" where calls of the kernel can get late inputs, else why not (not a CUDA plugin, or this
/// normcheck was built without the late writer)
std::string unavailable(const kernel& k);

/// the stream the late writer and the calls share (made on first use)
void* stream();

/// after an upload: the allocation's `bytes` at `device` stale until the late writer, queued
/// in stream() before the call, writes them back; throws std::runtime_error if CUDA refuses
void stage(void* device, std::size_t bytes);

}  // namespace nc::harness::late_inputs
