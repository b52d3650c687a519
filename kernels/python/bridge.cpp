// libnormcheck_python.so: a C-ABI kernel plugin whose calls run in a Python worker process.
//
// The plugin links no libpython: it spawns `python3 normcheck_bridge.py` (NORMCHECK_PYTHON
// names another interpreter) and forwards every call over a socket, so one binary serves any
// Python 3 (Debian's 3.11 in CI, the H200's 3.12). The memory lives in the Python process
// (numpy arrays on a CPU, torch tensors on the GPU): the plugin declares NC_CAP_DEVICE_MEMORY,
// so the harness reaches it only through copy(). alloc() hands out the address of a PROT_NONE
// reservation of the allocation's size: unique, 4096-byte aligned, never host memory (a
// dereference faults instead of reading garbage), and any pointer inside it decodes to
// (allocation, byte offset) for the Python side.
//
// The ABI-level contract (null pointers, strides, dtypes, overlap) is checked here with
// kernels/src/contract.cpp before anything is forwarded: those rules are about the C call, not
// the Python kernel under test. Calls outside the module's declaration are answered
// NC_ERR_UNSUPPORTED here as well.
//
// Processes: the worker is spawned by the process that first needs it. A forked child (the
// harness runs each property in a forked worker) inherits the parent's socket but never uses
// it: it spawns its own Python, so a kernel that kills its interpreter takes only that
// child's memory with it. After the Python worker dies, the next alloc() spawns a fresh one
// (shrinking re-runs the case) and the old allocations' pointers are refused.
//
// Entry points: normcheck_python_plugin(version, spec, &error) (what kernel::load calls: one
// table per spec, so several Python kernels can live in one process), and the ordinary
// normcheck_plugin(version), which reads the spec from NORMCHECK_PYTHON_KERNEL.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "contract.hpp"
#include "normcheck/variant.hpp"
#include "normcheck/abi.h"

extern char** environ;

namespace {

// the wire: every message is a 16-byte header (u32 op or status, u32 0, u64 payload bytes) and
// its payload, little-endian (both ends run on one machine)
enum op : std::uint32_t {
  op_hello = 1,
  op_alloc = 2,
  op_free = 3,  // no reply
  op_upload = 4,  // no reply: a failure is reported by the next reply
  op_download = 5,
  op_copy = 6,
  op_synchronize = 7,
  op_forward = 8,
  op_backward = 9,
};

struct header {
  std::uint32_t code, zero;
  std::uint64_t bytes;
};
static_assert(sizeof(header) == 16);

// one operand on the wire: the allocation (0: none), the byte offset of data in it, then the
// operand's own dtype and element offset and strides (a vector's stride is col_stride)
struct wire_operand {
  std::uint64_t allocation, byte_offset;
  std::int64_t dtype, offset, row_stride, col_stride;
};

// the call's operation (abi.h "Variants"): residual mode, in place, the weight offset's bits, rows,
// then a quantized output's fields (quant, scale, apply, group, the scale floor's bits; all zero
// for NC_QUANT_NONE) and a zero that keeps the operands after it 8-byte aligned
struct wire_operation {
  std::uint32_t residual, in_place, weight_offset_bits, rows;
  std::uint32_t quant, scale, apply, group, scale_floor_bits, zero;
};
static_assert(sizeof(wire_operation) == 40);
inline wire_operation wire_of(const nc_operation& op) {
  const bool q = nc::quantizes(op);
  return {std::uint32_t(op.residual), op.in_place, std::bit_cast<std::uint32_t>(op.weight_offset), std::uint32_t(op.rows),
          std::uint32_t(op.quant), q ? std::uint32_t(op.scale) : 0u, q ? std::uint32_t(op.apply) : 0u,
          q && op.scale == NC_SCALE_PER_GROUP ? std::uint32_t(op.group) : 0u,
          q && nc::dynamic_scale(op) ? std::bit_cast<std::uint32_t>(op.scale_floor) : 0u, 0u};
}
// per-head rows (op.rows NC_ROWS_HEADS or NC_ROWS_BATCHES): heads, the head stride of each 2-D
// operand in the message's order (x, y, residual, residual_out; x, dy, dx, residual_grad), then
// the tokens a batch of a 4-D view (0 for a 3-D one) and each operand's batch stride; 2-D rows
// are 1 and zeros
struct wire_heads {
  std::int64_t heads, stride[4], tokens, batch[4];
};
struct wire_strides {
  std::int64_t a, b, c, d;
};
template <class Heads>
wire_heads heads_of(const nc_operation& op, const Heads& h, wire_strides head, wire_strides batch) {
  wire_heads out{1, {0, 0, 0, 0}, 0, {0, 0, 0, 0}};
  if (op.rows == NC_ROWS_MATRIX) return out;
  if (h.heads > 1) out = {h.heads, {head.a, head.b, head.c, head.d}, 0, {0, 0, 0, 0}};
  if (op.rows == NC_ROWS_BATCHES) out.tokens = h.tokens, out.batch[0] = batch.a, out.batch[1] = batch.b,
                                  out.batch[2] = batch.c, out.batch[3] = batch.d;
  return out;
}

constexpr int max_kernels = 8;  // Python kernels one process can load (each a table slot)

struct allocation {
  std::size_t bytes;      // what alloc() was asked for
  std::size_t reserved;   // the reservation's length (>= one page)
  std::uint64_t generation;  // the Python worker it lives in
};

struct bridge {
  std::string spec;
  std::string name, backend;
  nc_plugin table{};
  nc_capabilities caps{};
  std::vector<float> epsilons;
  std::vector<nc_operation> operations;  // the declared operations (none: the plain one)
  bool loaded = false;

  std::mutex lock;  // one call on the socket at a time
  pid_t owner = 0;  // the process whose Python worker fd talks to
  int fd = -1;
  pid_t child = -1;
  std::uint64_t generation = 0;
  std::string death;  // why the last worker is gone ("" while it lives)
  std::map<std::uintptr_t, allocation> allocations;
};

std::array<bridge, max_kernels> bridges;
std::mutex bridges_lock;

thread_local std::string last_error_text[max_kernels];

nc_status fail(int slot, nc_status s, std::string message) {
  last_error_text[slot] = std::move(message);
  return s;
}

std::string script_path() {
  if (const char* p = std::getenv("NORMCHECK_PYTHON_BRIDGE"); p && *p) return p;
  // installed beside this library in the build tree
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&script_path), &info) != 0 && info.dli_fname != nullptr) {
    std::string self = info.dli_fname;
    const auto slash = self.rfind('/');
    return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/normcheck_bridge.py";
  }
  return "normcheck_bridge.py";
}

bool send_all(int fd, const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    // MSG_NOSIGNAL: a dead worker is an error to report, never a SIGPIPE for the harness
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n, bytes -= std::size_t(n);
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n, bytes -= std::size_t(n);
  }
  return true;
}

// the worker is gone: reap it and say how it went
void bury(bridge& b, const char* during) {
  std::string how = "its socket closed";
  if (b.child > 0) {
    int status = 0;
    // it closed the socket: it is exiting or dead; give it a moment to finish dying
    for (int i = 0; i < 200; ++i) {
      const pid_t got = ::waitpid(b.child, &status, WNOHANG);
      if (got == b.child) {
        if (WIFEXITED(status))
          how = "it exited with status " + std::to_string(WEXITSTATUS(status)) +
                " (the kernel called os._exit() or exit()?)";
        else if (WIFSIGNALED(status))
          how = "it died by signal " + std::to_string(WTERMSIG(status));
        break;
      }
      if (got < 0) break;
      ::usleep(5000);
    }
  }
  if (b.fd >= 0) ::close(b.fd);
  b.fd = -1, b.child = -1;
  b.death = std::string("the Python worker of '") + b.spec + "' died during " + during + ": " + how;
}

// spawns this process's Python worker and says hello; the reply is the declaration text
nc_status spawn(int slot, std::string* hello_reply) {
  bridge& b = bridges[std::size_t(slot)];
  if (b.owner != getpid()) {
    // inherited from the parent: its worker is the parent's; drop our copy of the socket and
    // the parent's allocations (they live in the parent's worker)
    if (b.fd >= 0) ::close(b.fd);
    b.fd = -1, b.child = -1;
    for (auto& [address, a] : b.allocations) ::munmap(reinterpret_cast<void*>(address), a.reserved);
    b.allocations.clear();
    b.owner = getpid();
  }
  if (b.fd >= 0) return NC_OK;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return fail(slot, NC_ERR_RUNTIME, std::string("cannot create the Python worker's socket: ") + std::strerror(errno));
  // the child's end becomes fd 3 of the worker; keep both ends above it so dup2 clears CLOEXEC
  for (int& end : pair) {
    const int moved = ::fcntl(end, F_DUPFD_CLOEXEC, 10);
    ::close(end);
    end = moved;
  }
  const char* python_env = std::getenv("NORMCHECK_PYTHON");
  const std::string python = python_env && *python_env ? python_env : "python3";
  const std::string script = script_path();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 3);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  // a kernel's print() goes to stderr: stdout belongs to the harness's report
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  std::vector<std::string> words{python, "-B", script, b.spec};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pair[1]);
  if (err != 0) {
    ::close(pair[0]);
    return fail(slot, NC_ERR_RUNTIME,
                "cannot start the Python worker '" + python + "' (NORMCHECK_PYTHON): " + std::strerror(err));
  }
  b.fd = pair[0], b.child = pid, b.death.clear();
  ++b.generation;
  header h{op_hello, 0, b.spec.size()};
  header reply{};
  if (!send_all(b.fd, &h, sizeof h) || !send_all(b.fd, b.spec.data(), b.spec.size()) ||
      !recv_all(b.fd, &reply, sizeof reply)) {
    bury(b, "start-up");
    return fail(slot, NC_ERR_RUNTIME,
                b.death + " (is '" + python + "' a Python 3 with numpy? is the bridge script at '" + script + "'?)");
  }
  std::string text(reply.bytes, '\0');
  if (!recv_all(b.fd, text.data(), text.size())) {
    bury(b, "start-up");
    return fail(slot, NC_ERR_RUNTIME, b.death);
  }
  if (reply.code != NC_OK) {
    // the module does not import, or its declaration is wrong: the worker has exited
    ::close(b.fd);
    ::waitpid(b.child, nullptr, 0);
    b.fd = -1, b.child = -1;
    return fail(slot, nc_status(reply.code), text);
  }
  if (hello_reply) *hello_reply = std::move(text);
  return NC_OK;
}

// one request and its reply. reply_data (if given) receives the reply's payload on NC_OK, which
// must be exactly reply_bytes long
nc_status request(int slot, std::uint32_t code, const void* a, std::size_t a_bytes, const void* b_data,
                  std::size_t b_bytes, bool wants_reply, void* reply_data = nullptr, std::size_t reply_bytes = 0,
                  const char* during = "a call") {
  bridge& b = bridges[std::size_t(slot)];
  if (b.owner != getpid() || b.fd < 0) {
    if (!b.death.empty() && b.owner == getpid()) return fail(slot, NC_ERR_RUNTIME, b.death);
    if (const nc_status s = spawn(slot, nullptr); s != NC_OK) return s;
  }
  header h{code, 0, a_bytes + b_bytes};
  if (!send_all(b.fd, &h, sizeof h) || !send_all(b.fd, a, a_bytes) || (b_bytes && !send_all(b.fd, b_data, b_bytes))) {
    bury(b, during);
    return fail(slot, NC_ERR_RUNTIME, b.death);
  }
  if (!wants_reply) return NC_OK;
  header reply{};
  if (!recv_all(b.fd, &reply, sizeof reply)) {
    bury(b, during);
    return fail(slot, NC_ERR_RUNTIME, b.death);
  }
  if (reply.code == NC_OK && reply_data != nullptr && reply.bytes == reply_bytes) {
    if (!recv_all(b.fd, reply_data, reply_bytes)) {
      bury(b, during);
      return fail(slot, NC_ERR_RUNTIME, b.death);
    }
    return NC_OK;
  }
  std::string text(reply.bytes, '\0');
  if (!recv_all(b.fd, text.data(), text.size())) {
    bury(b, during);
    return fail(slot, NC_ERR_RUNTIME, b.death);
  }
  if (reply.code == NC_OK && reply_data != nullptr)
    return fail(slot, NC_ERR_RUNTIME, "the Python worker sent " + std::to_string(reply.bytes) + " bytes, not " +
                                          std::to_string(reply_bytes));
  if (reply.code != NC_OK) return fail(slot, nc_status(reply.code), text);
  return NC_OK;
}

// a pointer into one of this worker's allocations: (allocation, byte offset, bytes after it)
struct located {
  std::uintptr_t allocation = 0;
  std::size_t offset = 0, left = 0;
};

bool locate(bridge& b, const void* p, located* out) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto it = b.allocations.upper_bound(address);
  if (it == b.allocations.begin()) return false;
  --it;
  if (address - it->first > it->second.bytes || it->second.generation != b.generation || b.owner != getpid())
    return false;
  out->allocation = it->first;
  out->offset = address - it->first;
  out->left = it->second.bytes - out->offset;
  return true;
}

// ---- the table's functions, one instantiation per slot

template <int slot>
struct entry {
  static bridge& self() { return bridges[std::size_t(slot)]; }

  static const char* last_error() { return last_error_text[slot].c_str(); }

  static nc_status alloc(size_t bytes, void** ptr) {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (ptr == nullptr) return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'ptr' is a null pointer");
    // a new worker after a death: the harness's next case starts on a fresh interpreter
    if (b.owner != getpid() || b.fd < 0) {
      b.death.clear();
      if (const nc_status s = spawn(slot, nullptr); s != NC_OK) return s;
    }
    const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
    const std::size_t reserved = (bytes + page - 1) / page * page + page;  // a page apart: distinct ends
    void* p = ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return fail(slot, NC_ERR_RUNTIME, "cannot reserve " + std::to_string(bytes) + " bytes of address space");
    const std::uint64_t message[2] = {reinterpret_cast<std::uintptr_t>(p), bytes};
    if (const nc_status s = request(slot, op_alloc, message, sizeof message, nullptr, 0, true, nullptr, 0, "alloc");
        s != NC_OK) {
      ::munmap(p, reserved);
      return s;
    }
    b.allocations[reinterpret_cast<std::uintptr_t>(p)] = {bytes, reserved, b.generation};
    *ptr = p;
    return NC_OK;
  }

  static nc_status free(void* p) {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (p == nullptr) return NC_OK;
    const auto it = b.allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == b.allocations.end())
      return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'ptr' was not returned by this plugin's alloc");
    const bool live = it->second.generation == b.generation && b.owner == getpid() && b.fd >= 0;
    ::munmap(p, it->second.reserved);
    b.allocations.erase(it);
    if (!live) return NC_OK;  // its worker is gone, and the memory with it
    const std::uint64_t message[1] = {reinterpret_cast<std::uintptr_t>(p)};
    return request(slot, op_free, message, sizeof message, nullptr, 0, false, nullptr, 0, "free");
  }

  static nc_status copy(void* dst, const void* src, size_t bytes, nc_copy_kind kind) {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (bytes == 0) return NC_OK;
    const auto device = [&](const void* p, const char* name, located* at) -> nc_status {
      if (!locate(b, p, at))
        return fail(slot, NC_ERR_INVALID_ARGUMENT,
                    std::string("argument '") + name + "' is not memory of this plugin's alloc" +
                        (b.death.empty() ? "" : " (or of a Python worker that died: " + b.death + ")"));
      if (at->left < bytes)
        return fail(slot, NC_ERR_INVALID_ARGUMENT,
                    std::string("argument 'bytes' = ") + std::to_string(bytes) + ": '" + name + "' has only " +
                        std::to_string(at->left) + " bytes of its allocation after it");
      return NC_OK;
    };
    located d, s;
    if (kind == NC_HOST_TO_DEVICE) {
      if (const nc_status st = device(dst, "dst", &d); st != NC_OK) return st;
      const std::uint64_t message[3] = {d.allocation, d.offset, bytes};
      return request(slot, op_upload, message, sizeof message, src, bytes, false, nullptr, 0, "an upload");
    }
    if (kind == NC_DEVICE_TO_HOST) {
      if (const nc_status st = device(src, "src", &s); st != NC_OK) return st;
      const std::uint64_t message[3] = {s.allocation, s.offset, bytes};
      return request(slot, op_download, message, sizeof message, nullptr, 0, true, dst, bytes, "a download");
    }
    if (kind == NC_DEVICE_TO_DEVICE) {
      if (const nc_status st = device(dst, "dst", &d); st != NC_OK) return st;
      if (const nc_status st = device(src, "src", &s); st != NC_OK) return st;
      const std::uint64_t message[5] = {d.allocation, d.offset, s.allocation, s.offset, bytes};
      return request(slot, op_copy, message, sizeof message, nullptr, 0, true, nullptr, 0, "a copy");
    }
    return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'kind' = " + std::to_string(int(kind)) + ": not an nc_copy_kind");
  }

  static nc_status synchronize() {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (b.owner != getpid() || b.fd < 0) b.death.clear();  // a probe of a fresh worker
    return request(slot, op_synchronize, nullptr, 0, nullptr, 0, true, nullptr, 0, "synchronize");
  }

  static nc_status workspace_size(const nc_backward_args* a, size_t* bytes) {
    if (a == nullptr || bytes == nullptr) return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'args' is a null pointer");
    *bytes = 0;  // a Python kernel allocates its own scratch
    return NC_OK;
  }

  // an operand for the wire; count 0 needs no memory
  static nc_status operand(bridge& b, const char* name, const void* data, nc_dtype dtype, std::int64_t offset,
                           std::int64_t row_stride, std::int64_t col_stride, std::int64_t rows, std::int64_t cols,
                           wire_operand* out, const wire_heads& shape = {1, {}, 0, {}}, int k = 0) {
    *out = {0, 0, std::int64_t(dtype), offset, row_stride, col_stride};
    if (rows == 0 || cols == 0 || data == nullptr) return NC_OK;
    located at;
    if (!locate(b, data, &at))
      return fail(slot, NC_ERR_INVALID_ARGUMENT,
                  std::string("argument '") + name + "' is not memory of this plugin's alloc" +
                      (b.death.empty() ? "" : " (or of a Python worker that died: " + b.death + ")"));
    // contract.cpp has bounded the index; the last element must lie inside the allocation (a
    // per-head view: rows / heads tokens at the row stride, heads at the head stride; a 4-D
    // view's tokens a batch at the row stride, its batches at the batch stride)
    const std::int64_t heads = shape.heads, head_stride = shape.stride[k], batch_stride = shape.batch[k];
    const std::int64_t tokens = shape.tokens > 0 ? shape.tokens : rows / heads, batches = rows / heads / tokens;
    const std::int64_t last = offset + (tokens > 1 ? (tokens - 1) * row_stride : 0) +
                              (heads > 1 ? (heads - 1) * head_stride : 0) +
                              (batches > 1 ? (batches - 1) * batch_stride : 0) + (cols > 1 ? (cols - 1) * col_stride : 0);
    const std::size_t size = nc::dtype_size(dtype);
    if (std::uint64_t(last) + 1 > at.left / size)
      return fail(slot, NC_ERR_INVALID_ARGUMENT,
                  std::string("argument '") + name + "' reaches element " + std::to_string(last) + ", past the " +
                      std::to_string(at.left) + " bytes of its allocation after its data pointer");
    if (at.offset % size != 0)
      return fail(slot, NC_ERR_INVALID_ARGUMENT,
                  std::string("argument '") + name + "' is not aligned to its element size (" + std::to_string(size) +
                      " bytes)");
    out->allocation = at.allocation, out->byte_offset = at.offset;
    return NC_OK;
  }

  // the operation and N the declaration serves (abi.h "Variants", n_multiple)
  static nc_status outside(bridge& b, const nc_operation& op, std::int64_t n) {
    const bool declared = b.operations.empty() ? op == nc_operation{}
                                               : std::any_of(b.operations.begin(), b.operations.end(),
                                                             [&](const nc_operation& o) { return o == op; });
    if (!declared)
      return fail(slot, NC_ERR_UNSUPPORTED, b.name + " does not serve the operation " + nc::describe_operation(op) + " ('op')");
    if (b.caps.n_multiple > 1 && n % b.caps.n_multiple != 0)
      return fail(slot, NC_ERR_UNSUPPORTED,
                  b.name + " does not serve N = " + std::to_string(n) + " ('n'): a multiple of " +
                      std::to_string(b.caps.n_multiple) + " only");
    return NC_OK;
  }

  static nc_status outside(bridge& b, std::int64_t m, std::int64_t n, nc_dtype x, nc_dtype gamma,
                           const float* epsilon) {
    const nc_capabilities& c = b.caps;
    std::uint32_t pair = 0;
    if (x == NC_F32 && gamma == NC_F32) pair = NC_PAIR_F32;
    if (x == NC_F16) pair = gamma == NC_F16 ? NC_PAIR_F16 : NC_PAIR_F16_GAMMA_F32;
    if (x == NC_BF16) pair = gamma == NC_BF16 ? NC_PAIR_BF16 : NC_PAIR_BF16_GAMMA_F32;
    if ((c.dtype_pairs & pair) == 0)
      return fail(slot, NC_ERR_UNSUPPORTED, b.name + " does not serve this (x, gamma) dtype pair ('x', 'gamma')");
    if (c.max_n > 0 && n > c.max_n)
      return fail(slot, NC_ERR_UNSUPPORTED, b.name + " does not serve 'n' = " + std::to_string(n) +
                                                ": it declares N <= " + std::to_string(c.max_n));
    if (c.max_elements > 0 && m * n > c.max_elements)
      return fail(slot, NC_ERR_UNSUPPORTED, b.name + " does not serve M*N = " + std::to_string(m * n) + " ('m', 'n')");
    if (epsilon && c.epsilon_count > 0) {
      bool found = false;
      for (std::uint32_t i = 0; i < c.epsilon_count; ++i) found |= c.epsilons[i] == *epsilon;
      if (!found) return fail(slot, NC_ERR_UNSUPPORTED, b.name + " does not serve this 'epsilon'");
    }
    return NC_OK;
  }

  static nc_status forward(const nc_forward_args* a) {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (a == nullptr) return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'args' is a null pointer");
    nc_forward_args checked = *a;
    const bool no_r = (b.caps.flags & NC_NO_R) != 0;
    // a kernel without r gets r.data = NULL (abi.h): check the rest of the call as if r were
    // somewhere harmless, a reservation no operand can reach
    static char* nowhere = static_cast<char*>(
        ::mmap(nullptr, std::size_t(1) << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (no_r && checked.r.data == nullptr) checked.r.data = nowhere;
    if (const auto v = nc::check_forward(checked)) return fail(slot, NC_ERR_INVALID_ARGUMENT, v->message);
    if (const nc_status s = outside(b, a->m, a->n, a->x.dtype, a->gamma.dtype, &a->epsilon); s != NC_OK) return s;
    if (const nc_status s = outside(b, a->op, a->n); s != NC_OK) return s;
    if (no_r && a->r.data != nullptr)
      return fail(slot, NC_ERR_UNSUPPORTED, b.name + " writes no r: 'r.data' must be NULL");
    // y of a quantized operation holds one-byte codes (its dtype says which); scale is the fp32
    // operand of its scales: the static one (1 x 1, read) or the dynamic ones (written)
    struct {
      std::int64_t m, n;
      std::uint32_t epsilon_bits, zero;
      wire_operand x, gamma, y, r;
      wire_operation op;
      wire_operand residual, residual_out;
      wire_heads heads;
      wire_operand scale;
    } message{a->m, a->n, std::bit_cast<std::uint32_t>(a->epsilon), 0, {}, {}, {}, {}, wire_of(a->op), {}, {},
              heads_of(a->op, a->head, {a->head.x, a->head.y, a->head.residual, a->head.residual_out},
                       {a->head.batch.x, a->head.batch.y, a->head.batch.residual, a->head.batch.residual_out}),
              {}};
    const wire_heads& h = message.heads;
    nc_status s = operand(b, "x", a->x.data, a->x.dtype, a->x.offset, a->x.row_stride, a->x.col_stride, a->m, a->n,
                          &message.x, h, 0);
    if (s == NC_OK) s = operand(b, "gamma", a->gamma.data, a->gamma.dtype, a->gamma.offset, 0, a->gamma.stride, 1, a->n, &message.gamma);
    if (s == NC_OK)
      s = operand(b, "y", a->y.data, a->y.dtype, a->y.offset, a->y.row_stride, a->y.col_stride, a->m, a->n, &message.y,
                  h, 1);
    if (s == NC_OK && !no_r) s = operand(b, "r", a->r.data, a->r.dtype, a->r.offset, 0, a->r.stride, 1, a->m, &message.r);
    if (s == NC_OK && a->op.residual != NC_RESIDUAL_NONE) {
      const nc_matrix &in = a->residual, &out = a->residual_out;
      s = operand(b, "residual", in.data, in.dtype, in.offset, in.row_stride, in.col_stride, a->m, a->n, &message.residual,
                  h, 2);
      if (s == NC_OK)
        s = operand(b, "residual_out", out.data, out.dtype, out.offset, out.row_stride, out.col_stride, a->m, a->n,
                    &message.residual_out, h, 3);
    }
    if (s == NC_OK && nc::quantizes(a->op)) {
      const nc_matrix& sc = a->scale;
      s = operand(b, "scale", sc.data, sc.dtype, sc.offset, sc.row_stride, sc.col_stride, nc::scale_rows(a->op, a->m),
                  nc::scale_cols(a->op, a->n), &message.scale);
    }
    if (s != NC_OK) return s;
    return request(slot, op_forward, &message, sizeof message, nullptr, 0, true, nullptr, 0, "the forward");
  }

  static nc_status backward(const nc_backward_args* a) {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (a == nullptr) return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'args' is a null pointer");
    if (const auto v = nc::check_backward(*a, 0)) return fail(slot, NC_ERR_INVALID_ARGUMENT, v->message);
    if (const nc_status s = outside(b, a->m, a->n, a->x.dtype, a->gamma.dtype, nullptr); s != NC_OK) return s;
    if (const nc_status s = outside(b, a->op, a->n); s != NC_OK) return s;
    struct {
      std::int64_t m, n;
      wire_operand x, gamma, dy, r, dx, dgamma;
      wire_operation op;
      wire_operand residual_grad;
      wire_heads heads;
    } message{a->m, a->n, {}, {}, {}, {}, {}, {}, wire_of(a->op), {},
              heads_of(a->op, a->head, {a->head.x, a->head.dy, a->head.dx, a->head.residual_grad},
                       {a->head.batch.x, a->head.batch.dy, a->head.batch.dx, a->head.batch.residual_grad})};
    const wire_heads& h = message.heads;
    nc_status s = operand(b, "x", a->x.data, a->x.dtype, a->x.offset, a->x.row_stride, a->x.col_stride, a->m, a->n,
                          &message.x, h, 0);
    if (s == NC_OK) s = operand(b, "gamma", a->gamma.data, a->gamma.dtype, a->gamma.offset, 0, a->gamma.stride, 1, a->n, &message.gamma);
    if (s == NC_OK)
      s = operand(b, "dy", a->dy.data, a->dy.dtype, a->dy.offset, a->dy.row_stride, a->dy.col_stride, a->m, a->n, &message.dy,
                  h, 1);
    if (s == NC_OK) s = operand(b, "r", a->r.data, a->r.dtype, a->r.offset, 0, a->r.stride, 1, a->m, &message.r);
    if (s == NC_OK)
      s = operand(b, "dx", a->dx.data, a->dx.dtype, a->dx.offset, a->dx.row_stride, a->dx.col_stride, a->m, a->n, &message.dx,
                  h, 2);
    if (s == NC_OK) s = operand(b, "dgamma", a->dgamma.data, a->dgamma.dtype, a->dgamma.offset, 0, a->dgamma.stride, 1, a->n, &message.dgamma);
    if (s == NC_OK && a->op.residual != NC_RESIDUAL_NONE) {
      const nc_matrix& g = a->residual_grad;
      s = operand(b, "residual_grad", g.data, g.dtype, g.offset, g.row_stride, g.col_stride, a->m, a->n,
                  &message.residual_grad, h, 3);
    }
    if (s != NC_OK) return s;
    return request(slot, op_backward, &message, sizeof message, nullptr, 0, true, nullptr, 0, "the backward");
  }

  static void fill(bridge& b) {
    nc_plugin& t = b.table;
    t.abi_version = NORMCHECK_ABI_VERSION;
    t.name = b.name.c_str();
    t.backend = b.backend.c_str();
    t.capabilities = NC_CAP_DEVICE_MEMORY;  // what it serves is in caps
    t.forward = &forward;
    const bool backward_served = (b.caps.flags & NC_FORWARD_ONLY) == 0;
    t.backward = backward_served ? &backward : nullptr;
    t.workspace_size = backward_served ? &workspace_size : nullptr;
    t.alloc = &alloc;
    t.free = &free;
    t.copy = &copy;
    t.synchronize = &synchronize;
    t.last_error = &last_error;
    t.caps = &b.caps;
  }
};

template <int... slots>
void fill_slot(int slot, std::integer_sequence<int, slots...>) {
  ((slot == slots ? entry<slots>::fill(bridges[std::size_t(slots)]) : void()), ...);
}

// the declaration the worker sent: "key<TAB>value" lines
bool read_declaration(bridge& b, const std::string& text, std::string* error) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const std::string key = line.substr(0, tab), value = line.substr(tab + 1);
    if (key == "name") b.name = value;
    else if (key == "backend") b.backend = value;
    else if (key == "dtype_pairs") b.caps.dtype_pairs = std::uint32_t(std::stoul(value));
    else if (key == "layouts") b.caps.layouts = std::uint32_t(std::stoul(value));
    else if (key == "flags") b.caps.flags = std::uint32_t(std::stoul(value));
    else if (key == "max_n") b.caps.max_n = std::stoll(value);
    else if (key == "max_elements") b.caps.max_elements = std::stoll(value);
    else if (key == "epsilon_bits") b.epsilons.push_back(std::bit_cast<float>(std::uint32_t(std::stoul(value, nullptr, 16))));
    else if (key == "n_multiple") b.caps.n_multiple = std::stoll(value);
    else if (key == "operation") {
      // "residual<TAB>in_place<TAB>offset bits (hex)<TAB>rows", then for a quantized output
      // "<TAB>quant<TAB>scale<TAB>apply<TAB>group<TAB>scale floor bits (hex)"
      std::istringstream fields(value);
      std::uint32_t residual = 0, in_place = 0, rows = 0, quant = 0, scale = 0, apply = 0;
      std::int32_t group = 0;
      std::string bits, floor_bits = "0";
      fields >> residual >> in_place >> bits >> rows;
      if (fields >> quant) fields >> scale >> apply >> group >> floor_bits;
      nc_operation op{nc_residual(residual), in_place, std::bit_cast<float>(std::uint32_t(std::stoul(bits, nullptr, 16))),
                      nc_rows(rows)};
      op.quant = nc_quant(quant);
      op.scale = nc_scale(scale);
      op.apply = nc_scale_apply(apply);
      op.group = group;
      op.scale_floor = std::bit_cast<float>(std::uint32_t(std::stoul(floor_bits, nullptr, 16)));
      b.operations.push_back(op);
    }
  }
  b.caps.operation_count = std::uint32_t(b.operations.size());
  b.caps.operations = b.operations.empty() ? nullptr : b.operations.data();
  b.caps.epsilon_count = std::uint32_t(b.epsilons.size());
  b.caps.epsilons = b.epsilons.empty() ? nullptr : b.epsilons.data();
  if (b.caps.dtype_pairs == 0) {
    *error = "the Python worker of '" + b.spec + "' declared no dtype pair";
    return false;
  }
  return true;
}

std::string load_error;

const nc_plugin* load(std::uint32_t abi_version, const char* spec, const char** error) {
  const auto refuse = [&](std::string why) -> const nc_plugin* {
    load_error = std::move(why);
    if (error) *error = load_error.c_str();
    return nullptr;
  };
  if (abi_version != NORMCHECK_ABI_VERSION) return refuse("the Python bridge serves ABI version " + std::to_string(NORMCHECK_ABI_VERSION) + " only");
  if (spec == nullptr || *spec == '\0') return refuse("no Python kernel named (NORMCHECK_PYTHON_KERNEL is empty)");
  std::lock_guard guard(bridges_lock);
  for (bridge& b : bridges)
    if (b.loaded && b.spec == spec) return &b.table;
  for (int slot = 0; slot < max_kernels; ++slot) {
    bridge& b = bridges[std::size_t(slot)];
    if (b.loaded || !b.spec.empty()) continue;
    b.spec = spec;
    b.owner = getpid();
    std::string declaration;
    std::lock_guard call_guard(b.lock);
    if (spawn(slot, &declaration) != NC_OK) {
      std::string why = last_error_text[slot];
      b.spec.clear();
      return refuse(why);
    }
    std::string why;
    if (!read_declaration(b, declaration, &why)) {
      b.spec.clear();
      return refuse(why);
    }
    fill_slot(slot, std::make_integer_sequence<int, max_kernels>{});
    b.loaded = true;
    return &b.table;
  }
  return refuse("more than " + std::to_string(max_kernels) + " Python kernels in one process");
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const nc_plugin* normcheck_python_plugin(uint32_t abi_version,
                                                                               const char* spec, const char** error) {
  return load(abi_version, spec, error);
}

__attribute__((visibility("default"))) const nc_plugin* normcheck_plugin(uint32_t abi_version) {
  return load(abi_version, std::getenv("NORMCHECK_PYTHON_KERNEL"), nullptr);
}
}
