#include "normcheck/harness/late_inputs.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace nc::harness::late_inputs {
namespace {

// how long the late writer waits after it releases the call: far longer than the call's
// launch takes on the host, so that a call launched with programmatic dependent launch starts
// while the inputs are still stale
constexpr unsigned long long delay_ns = 200'000;

struct writer {
  using stream_fn = int (*)(void**, char*, std::size_t);
  using stage_fn = int (*)(void*, void*, std::size_t, unsigned long long, char*, std::size_t);
  std::string path, problem;
  stream_fn make_stream = nullptr;
  stage_fn stage = nullptr;
  void* stream = nullptr;
};

writer& the_writer() {
  static writer w = [] {
    writer out;
    out.path = kernel::shipped_path("late_inputs");  // the shipped plugins' folder
    void* handle = dlopen(out.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      out.problem = "this normcheck has no late writer (" + out.path +
                    ": built with NORMCHECK_ENABLE_CUDA=ON only): " + dlerror();
      return out;
    }
    out.make_stream = reinterpret_cast<writer::stream_fn>(dlsym(handle, "normcheck_late_inputs_stream"));
    out.stage = reinterpret_cast<writer::stage_fn>(dlsym(handle, "normcheck_late_inputs_stage"));
    if (out.make_stream == nullptr || out.stage == nullptr) out.problem = out.path + " is not normcheck's late writer";
    return out;
  }();
  return w;
}

}  // namespace

std::string unavailable(const kernel& k) {
  if (k.backend() != "cuda" || !k.device_memory())
    return "it writes the inputs from a kernel in the call's CUDA stream: the kernel's backend is '" + k.backend() +
           "'";
  return the_writer().problem;
}

void* stream() {
  writer& w = the_writer();
  if (!w.problem.empty()) throw std::runtime_error(w.problem);
  if (w.stream == nullptr) {
    char error[256] = "";
    if (w.make_stream(&w.stream, error, sizeof error) != 0)
      throw std::runtime_error(std::string("the late writer's stream: ") + error);
  }
  return w.stream;
}

void stage(void* device, std::size_t bytes) {
  void* s = stream();
  char error[256] = "";
  if (the_writer().stage(s, device, bytes, delay_ns, error, sizeof error) != 0)
    throw std::runtime_error(std::string("the late writer: ") + error);
}

}  // namespace nc::harness::late_inputs
