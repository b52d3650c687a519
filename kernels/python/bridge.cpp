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
// kernels/api/contract.cpp before anything is forwarded: those rules are about the C call, not
// the Python kernel under test. Calls outside the module's declaration are answered
// NC_ERR_UNSUPPORTED here as well.
//
// Processes: at load the plugin spawns a zygote, an interpreter that imports the kernel's module
// (torch with it) once, before any CUDA context exists, answers the declaration and then only
// forks: each process that calls the kernel (the harness runs each property in a forked worker)
// asks it for an interpreter of its own over the zygote's socket, passing the new worker's
// socket and a pipe the zygote writes the worker's wait status into when it ends. The forked
// worker joins the asking process's group, so the harness's watchdog kills it with its worker;
// a kernel that kills its interpreter takes only that process's memory with it. After the
// Python worker dies, the next alloc() asks for a fresh one (shrinking re-runs the case) and
// the old allocations' pointers are refused. Where the zygote cannot fork (the module made a
// CUDA context at import, NORMCHECK_PYTHON_ZYGOTE=0, the zygote is gone), each process spawns
// its own interpreter, which imports the module again.
//
// Memory: numpy memory is shared. alloc() takes a segment, a memfd mapped in this process
// (beside the PROT_NONE reservation the harness gets) and in the worker, which got the memfd
// with the segment's first alloc: copy() is a memcpy here, no message. A freed segment is kept
// for the next alloc of its size class (no page faults, no munmap's TLB shootdown a case). A call is one request and one reply; an alloc,
// an upload and a free need none (a failure is told by the next reply), and synchronize() needs
// none after a reply with nothing sent since (the worker synchronizes before it answers).
//
// Entry points: normcheck_python_plugin(version, spec, &error) (what kernel::load calls: one
// table per spec, so several Python kernels can live in one process), and the ordinary
// normcheck_plugin(version), which reads the spec from NORMCHECK_PYTHON_KERNEL.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <poll.h>
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

#include "normcheck/contract.hpp"
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
  op_fork = 10,  // to the zygote, with the new worker's socket and status pipe: no reply
  op_alloc_shared = 11,  // an allocation in a segment, with its memfd when new: no reply
};

// shared memory (numpy): a memfd mapped here and in the worker, kept across allocations
struct segment {
  std::uint64_t id;
  std::size_t capacity;  // a power of two, >= 64 KiB
  char* reservation;     // what alloc() hands out: PROT_NONE, capacity and a page
  char* shared;          // this process's mapping
  int fd;                // the memfd
  std::uint64_t generation;  // the worker that maps it
  bool in_use;
};
constexpr std::size_t kept_segment_bytes = std::size_t(1) << 30;  // freed segments kept, at most

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
  std::size_t reserved;   // the reservation's length (>= one page); 0: its segment's
  std::uint64_t generation;  // the Python worker it lives in
  char* shared = nullptr;    // this process's mapping of shared memory (numpy), else null
  std::uint64_t segment = 0;  // its segment's id (0: none)
};

struct bridge {
  std::string spec;
  std::string name, backend;
  nc_plugin table{};
  nc_capabilities caps{};
  std::vector<float> epsilons;
  std::vector<nc_operation> operations;  // the declared operations (none: the plain one)
  bool loaded = false;

  bool shares_memory = false;  // the worker maps memfds (numpy memory)

  std::mutex lock;  // one call on the socket at a time
  pid_t owner = 0;  // the process whose Python worker fd talks to
  int fd = -1;
  pid_t child = -1;      // a worker this process spawned (reaped here), else -1
  int status_fd = -1;    // a worker the zygote forked: the pipe its wait status comes down
  int zygote = -1;       // the zygote's socket (SOCK_SEQPACKET), inherited by forked processes
  bool unconfirmed = false;  // a message that may fail was sent since the last reply
  std::uint64_t generation = 0;
  std::string death;  // why the last worker is gone ("" while it lives)
  std::map<std::uintptr_t, allocation> allocations;
  std::vector<segment> segments;
  std::uint64_t next_segment = 1;
  std::string batch;  // messages without a reply that wait for the next message that goes
  std::vector<int> batch_fds;  // the descriptors they pass (duplicates, closed once sent)
};
constexpr std::size_t max_batched_fds = 64, max_batch_bytes = 1 << 16;  // normcheck_bridge.py's DESCRIPTORS

void drop_batch(bridge& b) {
  for (const int fd : b.batch_fds) ::close(fd);
  b.batch.clear(), b.batch_fds.clear();
}

// what alloc() hands out: a PROT_NONE reservation, unique, page-aligned, never host memory (a
// dereference faults), a page longer than the allocation (distinct ends)
std::size_t reservation_bytes(std::size_t bytes) {
  const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page + page;
}
void* reserve(std::size_t bytes) {
  return ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

void drop_segment(bridge& b, std::size_t i) {
  ::munmap(b.segments[i].reservation, reservation_bytes(b.segments[i].capacity));
  ::munmap(b.segments[i].shared, b.segments[i].capacity);
  ::close(b.segments[i].fd);
  b.segments.erase(b.segments.begin() + std::ptrdiff_t(i));
}

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

// a message in one sendmsg where the socket takes it (the reader wakes once, not once a part):
// the messages batched before it (batch), its header, then up to two payload parts, with
// descriptors attached (SCM_RIGHTS) to its first byte
bool send_message(int fd, const header* h, const void* a, std::size_t a_bytes, const void* b = nullptr,
                  std::size_t b_bytes = 0, const std::vector<int>& fds = {}, const std::string& batch = {}) {
  iovec parts[4] = {{const_cast<char*>(batch.data()), batch.size()},
                    {const_cast<header*>(h), h ? sizeof *h : 0},
                    {const_cast<void*>(a), a_bytes},
                    {const_cast<void*>(b), b_bytes}};
  iovec* at = parts;
  int left = 4;
  std::vector<char> control(fds.empty() ? 0 : CMSG_SPACE(fds.size() * sizeof(int)));
  msghdr m{};
  if (!fds.empty()) {
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  while (left > 0) {
    m.msg_iov = at, m.msg_iovlen = std::size_t(left);
    // MSG_NOSIGNAL: a dead worker is an error to report, never a SIGPIPE for the harness
    ssize_t n = ::sendmsg(fd, &m, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    m.msg_control = nullptr, m.msg_controllen = 0;  // the descriptors went with the first byte
    for (; left > 0 && std::size_t(n) >= at->iov_len; --left, ++at) n -= ssize_t(at->iov_len);
    if (left > 0) at->iov_base = static_cast<char*>(at->iov_base) + n, at->iov_len -= std::size_t(n);
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

// what a wait status says of how the worker went
std::string how_it_ended(int status) {
  if (WIFEXITED(status))
    return "it exited with status " + std::to_string(WEXITSTATUS(status)) + " (the kernel called os._exit() or exit()?)";
  if (WIFSIGNALED(status)) return "it died by signal " + std::to_string(WTERMSIG(status));
  return "its socket closed";
}

// the worker is gone: reap it (or read its status from the zygote) and say how it went
void bury(bridge& b, const char* during) {
  std::string how = "its socket closed";
  if (b.child > 0) {
    int status = 0;
    // it closed the socket: it is exiting or dead; give it a moment to finish dying
    for (int i = 0; i < 200; ++i) {
      const pid_t got = ::waitpid(b.child, &status, WNOHANG);
      if (got == b.child) {
        how = how_it_ended(status);
        break;
      }
      if (got < 0) break;
      ::usleep(5000);
    }
  } else if (b.status_fd >= 0) {
    // the zygote reaps it and writes its wait status: the same moment to finish dying
    pollfd p{b.status_fd, POLLIN, 0};
    std::int32_t status = 0;
    if (::poll(&p, 1, 1000) == 1 && ::read(b.status_fd, &status, sizeof status) == ssize_t(sizeof status))
      how = how_it_ended(status);
  }
  if (b.fd >= 0) ::close(b.fd);
  if (b.status_fd >= 0) ::close(b.status_fd);
  b.fd = -1, b.child = -1, b.status_fd = -1;
  drop_batch(b);  // messages for the dead worker
  b.death = std::string("the Python worker of '") + b.spec + "' died during " + during + ": " + how;
}

// NAME=0 in the environment: a speed-up turned off (to measure it, or to rule it out)
bool turned_off(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "0";
}

const char* python_interpreter() {
  const char* python_env = std::getenv("NORMCHECK_PYTHON");
  return python_env && *python_env ? python_env : "python3";
}

// a socket pair with both ends above fd 10, close-on-exec (dup2 onto fd 3 clears it in a child)
bool socket_pair(int type, int pair[2]) {
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, pair) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    const int moved = ::fcntl(pair[i], F_DUPFD_CLOEXEC, 10);
    ::close(pair[i]);
    pair[i] = moved;
  }
  return true;
}

// `python3 -B normcheck_bridge.py SPEC` with a socket of `type` on its fd 3 (SOCK_STREAM: a
// worker; SOCK_SEQPACKET: the zygote); *end is this process's end of it
nc_status start_python(int slot, int type, int* end, pid_t* pid) {
  int pair[2];
  if (!socket_pair(type, pair))
    return fail(slot, NC_ERR_RUNTIME, std::string("cannot create the Python worker's socket: ") + std::strerror(errno));
  const std::string python = python_interpreter(), script = script_path();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 3);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  // a kernel's print() goes to stderr: stdout belongs to the harness's report
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  std::vector<std::string> words{python, "-B", script, bridges[std::size_t(slot)].spec};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int err = ::posix_spawnp(pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pair[1]);
  *end = pair[0];
  if (err != 0) {
    ::close(pair[0]);
    return fail(slot, NC_ERR_RUNTIME, "cannot start the Python worker '" + python + "' (NORMCHECK_PYTHON): " + std::strerror(err));
  }
  return NC_OK;
}

// the hello on a new worker's socket; its reply is the declaration text
nc_status hello(int slot, std::string* hello_reply) {
  bridge& b = bridges[std::size_t(slot)];
  header h{op_hello, 0, b.spec.size()};
  header reply{};
  if (!send_message(b.fd, &h, b.spec.data(), b.spec.size()) || !recv_all(b.fd, &reply, sizeof reply)) {
    bury(b, "start-up");
    return fail(slot, NC_ERR_RUNTIME, b.death + " (is '" + python_interpreter() + "' a Python 3 with numpy? is the bridge script at '" +
                                          script_path() + "'?)");
  }
  std::string text(reply.bytes, '\0');
  if (!recv_all(b.fd, text.data(), text.size())) {
    bury(b, "start-up");
    return fail(slot, NC_ERR_RUNTIME, b.death);
  }
  if (reply.code != NC_OK) {
    // the module does not import, or its declaration is wrong: the worker has exited
    ::close(b.fd);
    if (b.child > 0) ::waitpid(b.child, nullptr, 0);
    if (b.status_fd >= 0) ::close(b.status_fd);
    b.fd = -1, b.child = -1, b.status_fd = -1;
    return fail(slot, nc_status(reply.code), text);
  }
  b.unconfirmed = false;
  if (hello_reply) *hello_reply = std::move(text);
  return NC_OK;
}

// a worker forked by the zygote for this process, in this process's group; false (and the
// zygote's socket closed) where the zygote is gone or the worker does not answer
bool fork_from_zygote(int slot) {
  bridge& b = bridges[std::size_t(slot)];
  int pair[2], status[2];
  if (!socket_pair(SOCK_STREAM, pair)) return false;
  if (::pipe2(status, O_CLOEXEC) != 0) {
    ::close(pair[0]), ::close(pair[1]);
    return false;
  }
  const std::int64_t group = ::getpgrp();
  const header h{op_fork, 0, sizeof group};
  const bool sent = send_message(b.zygote, &h, &group, sizeof group, nullptr, 0, {pair[1], status[1]});
  ::close(pair[1]), ::close(status[1]);
  b.fd = pair[0], b.status_fd = status[0], b.child = -1, b.death.clear();
  ++b.generation;
  if (sent && hello(slot, nullptr) == NC_OK) return true;
  if (b.fd >= 0) ::close(b.fd);
  if (b.status_fd >= 0) ::close(b.status_fd);
  b.fd = -1, b.status_fd = -1;
  ::close(b.zygote);
  b.zygote = -1;
  return false;
}

// the zygote, at load: it imports the module and answers the declaration; a "zygote 1" line in
// it says it forks workers from now on (else it has exited, and each process spawns its own)
nc_status start_zygote(int slot, std::string* declaration, bool* answered) {
  bridge& b = bridges[std::size_t(slot)];
  int end = -1;
  pid_t pid = -1;
  if (const nc_status s = start_python(slot, SOCK_SEQPACKET, &end, &pid); s != NC_OK) return s;
  // one packet each way: the hello with the spec, the declaration (or why the module does not load)
  const header h{op_hello, 0, b.spec.size()};
  std::string text(1 << 20, '\0');
  ssize_t got = -1;
  if (send_message(end, &h, b.spec.data(), b.spec.size())) {
    do got = ::recv(end, text.data(), text.size(), 0);
    while (got < 0 && errno == EINTR);
  }
  header reply{};
  if (got >= ssize_t(sizeof reply)) std::memcpy(&reply, text.data(), sizeof reply);
  if (got < ssize_t(sizeof reply) || reply.bytes != std::uint64_t(got) - sizeof reply) {
    // it died before it answered: the caller starts a worker the old way, which says why
    ::close(end);
    ::waitpid(pid, nullptr, 0);
    return fail(slot, NC_ERR_RUNTIME, "the Python zygote of '" + b.spec + "' did not answer");
  }
  text = text.substr(sizeof reply, reply.bytes);
  *answered = true;
  const bool forks = reply.code == NC_OK && text.find("zygote\t1\n") != std::string::npos;
  if (!forks) {
    ::close(end);
    ::waitpid(pid, nullptr, 0);
  } else {
    b.zygote = end;  // never reaped: it outlives the process that started it only by its last worker
  }
  if (reply.code != NC_OK) return fail(slot, nc_status(reply.code), text);
  *declaration = std::move(text);
  return NC_OK;
}

// this process's Python worker: forked by the zygote, else spawned here; hello_reply (at load)
// receives the declaration text
nc_status spawn(int slot, std::string* hello_reply) {
  bridge& b = bridges[std::size_t(slot)];
  if (b.owner != getpid()) {
    // inherited from the parent: its worker is the parent's; drop our copy of the socket and
    // the parent's allocations (they live in the parent's worker)
    if (b.fd >= 0) ::close(b.fd);
    if (b.status_fd >= 0) ::close(b.status_fd);
    b.fd = -1, b.child = -1, b.status_fd = -1;
    for (auto& [address, a] : b.allocations)
      if (a.reserved) ::munmap(reinterpret_cast<void*>(address), a.reserved);
    b.allocations.clear();
    while (!b.segments.empty()) drop_segment(b, 0);
    drop_batch(b);
    b.owner = getpid();
  }
  if (b.fd >= 0) return NC_OK;
  if (b.zygote >= 0 && hello_reply == nullptr && fork_from_zygote(slot)) return NC_OK;
  int end = -1;
  pid_t pid = -1;
  if (const nc_status s = start_python(slot, SOCK_STREAM, &end, &pid); s != NC_OK) return s;
  b.fd = end, b.child = pid, b.death.clear();
  ++b.generation;
  return hello(slot, hello_reply);
}

// one request and its reply. reply_data (if given) receives the reply's payload on NC_OK, which
// must be exactly reply_bytes long. Without a reply (wants_reply false) a failure of the message
// is told by the next reply
nc_status request(int slot, std::uint32_t code, const void* a, std::size_t a_bytes, const void* b_data,
                  std::size_t b_bytes, bool wants_reply, void* reply_data = nullptr, std::size_t reply_bytes = 0,
                  const char* during = "a call", int passed_fd = -1) {
  bridge& b = bridges[std::size_t(slot)];
  if (b.owner != getpid() || b.fd < 0) {
    if (!b.death.empty() && b.owner == getpid()) return fail(slot, NC_ERR_RUNTIME, b.death);
    if (const nc_status s = spawn(slot, nullptr); s != NC_OK) return s;
  }
  const header h{code, 0, a_bytes + b_bytes};
  if (!wants_reply && code != op_free) b.unconfirmed = true;  // a free cannot fail
  // an alloc of shared memory and a free wait for the next message that goes: the worker wakes
  // once a call, not once a message (a new segment's memfd goes with the batch)
  const bool batched = code == op_alloc_shared || code == op_free;
  if (batched) {
    b.batch.append(reinterpret_cast<const char*>(&h), sizeof h).append(static_cast<const char*>(a), a_bytes);
    if (passed_fd >= 0) {
      b.batch_fds.push_back(::fcntl(passed_fd, F_DUPFD_CLOEXEC, 10));
      if (b.batch_fds.back() < 0) {
        b.batch_fds.pop_back();
        return fail(slot, NC_ERR_RUNTIME, std::string("cannot pass shared memory to the Python worker: ") + std::strerror(errno));
      }
    }
    if (b.batch_fds.size() < max_batched_fds && b.batch.size() < max_batch_bytes) return NC_OK;
  }
  // the batch, then this message (in the batch already where it is batched)
  const bool sent = batched ? send_message(b.fd, nullptr, nullptr, 0, nullptr, 0, b.batch_fds, b.batch)
                            : send_message(b.fd, &h, a, a_bytes, b_data, b_bytes, b.batch_fds, b.batch);
  drop_batch(b);
  if (!sent) {
    bury(b, during);
    return fail(slot, NC_ERR_RUNTIME, b.death);
  }
  if (!wants_reply) return NC_OK;
  header reply{};
  if (!recv_all(b.fd, &reply, sizeof reply)) {
    bury(b, during);
    return fail(slot, NC_ERR_RUNTIME, b.death);
  }
  b.unconfirmed = false;
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
  char* shared = nullptr;  // the byte in this process's mapping of shared memory, else null
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
  out->shared = it->second.shared ? it->second.shared + out->offset : nullptr;
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
    // shared memory: a segment of the size class and its reservation (the worker maps a new
    // segment's memfd), no reply; else a reservation of the allocation's own
    bool is_new = false;
    segment* shared = b.shares_memory ? share(bytes, &is_new) : nullptr;
    const std::size_t reserved = shared ? 0 : reservation_bytes(bytes);
    void* p = shared ? shared->reservation : reserve(reserved);
    if (p == MAP_FAILED)
      return fail(slot, NC_ERR_RUNTIME, "cannot reserve " + std::to_string(bytes) + " bytes of address space");
    nc_status s = NC_OK;
    if (shared) {
      const std::uint64_t message[4] = {reinterpret_cast<std::uintptr_t>(p), bytes, shared->id, shared->capacity};
      s = request(slot, op_alloc_shared, message, sizeof message, nullptr, 0, false, nullptr, 0, "alloc",
                  is_new ? shared->fd : -1);
    } else {
      const std::uint64_t message[2] = {reinterpret_cast<std::uintptr_t>(p), bytes};
      s = request(slot, op_alloc, message, sizeof message, nullptr, 0, true, nullptr, 0, "alloc");
    }
    if (s != NC_OK) {
      if (shared) shared->in_use = false;
      else ::munmap(p, reserved);
      return s;
    }
    b.allocations[reinterpret_cast<std::uintptr_t>(p)] = {bytes, reserved, b.generation, shared ? shared->shared : nullptr,
                                                          shared ? shared->id : 0};
    *ptr = p;
    return NC_OK;
  }

  // a free segment of this worker for bytes, else a new one (is_new: the worker gets its memfd
  // with this alloc); null where the system gives no memfd (the worker's own memory then,
  // through the socket). Free segments of a dead worker are dropped
  static segment* share(std::size_t bytes, bool* is_new) {
    bridge& b = self();
    const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(bytes, 1 << 16));
    for (std::size_t i = b.segments.size(); i-- > 0;)
      if (!b.segments[i].in_use && b.segments[i].generation != b.generation) drop_segment(b, i);
    for (std::size_t i = 0; i < b.segments.size(); ++i) {
      segment& g = b.segments[i];
      if (g.in_use || g.capacity != capacity || g.generation != b.generation) continue;
      g.in_use = true;
      std::rotate(b.segments.begin() + std::ptrdiff_t(i), b.segments.begin() + std::ptrdiff_t(i) + 1, b.segments.end());
      return &b.segments.back();
    }
    const int fd = ::memfd_create("normcheck-python", MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    void* m = ::ftruncate(fd, off_t(capacity)) == 0
                  ? ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0)
                  : MAP_FAILED;
    void* r = m == MAP_FAILED ? MAP_FAILED : reserve(reservation_bytes(capacity));
    if (r == MAP_FAILED) {
      if (m != MAP_FAILED) ::munmap(m, capacity);
      ::close(fd);
      return nullptr;
    }
    b.segments.push_back({b.next_segment++, capacity, static_cast<char*>(r), static_cast<char*>(m), fd, b.generation, true});
    *is_new = true;
    return &b.segments.back();
  }

  static nc_status free(void* p) {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (p == nullptr) return NC_OK;
    const auto it = b.allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == b.allocations.end())
      return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'ptr' was not returned by this plugin's alloc");
    const bool live = it->second.generation == b.generation && b.owner == getpid() && b.fd >= 0;
    if (it->second.reserved) ::munmap(p, it->second.reserved);
    // its segment is kept for the next alloc of its size while the worker lives and the kept
    // ones stay under kept_segment_bytes; else dropped here and (second word) in the worker
    std::uint64_t dropped = 0;
    if (const std::uint64_t id = it->second.segment) {
      std::size_t kept = 0, at = b.segments.size();
      for (std::size_t i = 0; i < b.segments.size(); ++i) {
        if (b.segments[i].id == id) at = i;
        else if (!b.segments[i].in_use) kept += b.segments[i].capacity;
      }
      if (at < b.segments.size()) {
        b.segments[at].in_use = false;
        if (!live || kept + b.segments[at].capacity > kept_segment_bytes) dropped = id, drop_segment(b, at);
      }
    }
    b.allocations.erase(it);
    if (!live) return NC_OK;  // its worker is gone, and the memory with it
    const std::uint64_t message[2] = {reinterpret_cast<std::uintptr_t>(p), dropped};
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
    // shared memory of a live worker: a memcpy here (a dead worker's copy fails as it always did)
    const bool here = b.fd >= 0;
    if (kind == NC_HOST_TO_DEVICE) {
      if (const nc_status st = device(dst, "dst", &d); st != NC_OK) return st;
      if (here && d.shared) return std::memcpy(d.shared, src, bytes), NC_OK;
      const std::uint64_t message[3] = {d.allocation, d.offset, bytes};
      return request(slot, op_upload, message, sizeof message, src, bytes, false, nullptr, 0, "an upload");
    }
    if (kind == NC_DEVICE_TO_HOST) {
      if (const nc_status st = device(src, "src", &s); st != NC_OK) return st;
      if (here && s.shared) return std::memcpy(dst, s.shared, bytes), NC_OK;
      const std::uint64_t message[3] = {s.allocation, s.offset, bytes};
      return request(slot, op_download, message, sizeof message, nullptr, 0, true, dst, bytes, "a download");
    }
    if (kind == NC_DEVICE_TO_DEVICE) {
      if (const nc_status st = device(dst, "dst", &d); st != NC_OK) return st;
      if (const nc_status st = device(src, "src", &s); st != NC_OK) return st;
      if (here && d.shared && s.shared) return std::memmove(d.shared, s.shared, bytes), NC_OK;
      const std::uint64_t message[5] = {d.allocation, d.offset, s.allocation, s.offset, bytes};
      return request(slot, op_copy, message, sizeof message, nullptr, 0, true, nullptr, 0, "a copy");
    }
    return fail(slot, NC_ERR_INVALID_ARGUMENT, "argument 'kind' = " + std::to_string(int(kind)) + ": not an nc_copy_kind");
  }

  static nc_status synchronize() {
    bridge& b = self();
    std::lock_guard guard(b.lock);
    if (b.owner != getpid() || b.fd < 0) b.death.clear();  // a probe of a fresh worker
    // the worker synchronizes before every reply: after one, with nothing sent since, it is idle
    else if (!b.unconfirmed) return NC_OK;
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
    else if (key == "shares_memory") b.shares_memory = value == "1" && !turned_off("NORMCHECK_PYTHON_SHARED_MEMORY");
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
    // the zygote; where it cannot start (or is turned off), a worker of this process's own
    bool answered = false;
    nc_status started = turned_off("NORMCHECK_PYTHON_ZYGOTE") ? NC_ERR_RUNTIME : start_zygote(slot, &declaration, &answered);
    if (started != NC_OK && !answered) started = spawn(slot, &declaration);
    if (started != NC_OK) {
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
