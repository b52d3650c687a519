// The simt scheduler: fibers for the threads of a block, a pool of OS threads for the
// blocks of a grid. The execution model is described in runtime.hpp.
#include "runtime.hpp"

#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/context/stack_traits.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define NORMCHECK_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NORMCHECK_SIMT_ASAN 1
#endif
#endif
#ifndef NORMCHECK_SIMT_ASAN
#define NORMCHECK_SIMT_ASAN 0
#endif
#if NORMCHECK_SIMT_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#pragma GCC visibility push(hidden)
namespace simt {

namespace detail {
constinit thread_local const thread_context* current = nullptr;
}

namespace {

namespace bctx = boost::context;

#if NORMCHECK_SIMT_ASAN
constexpr std::size_t fiber_stack_bytes = 256 * 1024;  // asan's redzones make frames larger
#else
constexpr std::size_t fiber_stack_bytes = 64 * 1024;
#endif
constexpr unsigned warp_lanes = 32;
constexpr unsigned max_block_threads = 1024;
// A round of the schedule as a chain of fibers (executor): where the switches are announced to
// AddressSanitizer (the fuzz builds), each costs more than the cache misses of entering a fiber
// from another fiber's stack instead of the scheduler's. On simt_sync_bench's reduction rounds
// (kernels/simt/bench) chaining takes a thread's sync point from 70 to 50 ns there, and gains
// nothing in a plain build (33-36 ns either way, g++ and clang), which keeps the scheduler in
// between. NORMCHECK_SIMT_CHAIN picks the order in any build (kernels/simt's tests run both).
#ifndef NORMCHECK_SIMT_CHAIN
#define NORMCHECK_SIMT_CHAIN NORMCHECK_SIMT_ASAN
#endif
constexpr bool chain_rounds = NORMCHECK_SIMT_CHAIN != 0;

// asan must hear of every stack switch, or it takes a fiber's frames for an overflow of
// the thread stack. boost 1.81 annotates only its ucontext fibers (BOOST_USE_ASAN is
// ignored by the fcontext ones used here), so the switches are annotated by hand.
void asan_start_switch([[maybe_unused]] void** fake_stack, [[maybe_unused]] const void* bottom,
                       [[maybe_unused]] std::size_t size) {
#if NORMCHECK_SIMT_ASAN
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#endif
}

void asan_finish_switch([[maybe_unused]] void* fake_stack, [[maybe_unused]] const void** bottom,
                        [[maybe_unused]] std::size_t* size) {
#if NORMCHECK_SIMT_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
#endif
}

// ---- text of faults -------------------------------------------------------------------

std::string coords(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

std::string site(const char* file, unsigned line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash != nullptr ? slash + 1 : file) + ":" + std::to_string(line);
}

std::string hex(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

// "3, 16-31"
std::string lane_list(unsigned lanes) {
  std::string text;
  while (lanes != 0) {
    const unsigned first = static_cast<unsigned>(std::countr_zero(lanes));
    const unsigned run = static_cast<unsigned>(std::countr_one(lanes >> first));
    if (!text.empty()) text += ", ";
    text += std::to_string(first);
    if (run > 1) text += "-" + std::to_string(first + run - 1);
    lanes &= ~(run == 32 ? ~0u : ((1u << run) - 1u) << first);
  }
  return text;
}

const char* shuffle_name(detail::shuffle_op op) {
  switch (op) {
    case detail::shuffle_op::idx:
      return "__shfl_sync";
    case detail::shuffle_op::down:
      return "__shfl_down_sync";
    case detail::shuffle_op::bfly:
      return "__shfl_xor_sync";
  }
  return "shuffle";
}

// ---- one block's threads --------------------------------------------------------------

enum class thread_status : std::uint8_t { ready, at_barrier, at_shuffle, exited };

// thrown into a suspended thread to unwind it when its block has faulted
struct abort_thread {};

struct launch_job {
  detail::kernel_invoker invoke;
  const void* closure;
  dim3 grid;
  dim3 block;
  unsigned threads;      // per block
  std::uint64_t blocks;  // in the grid
  std::uint64_t seed;
  std::atomic<std::uint64_t> next_block{0};
  std::atomic<bool> failed{false};
  std::mutex fault_mutex;
  std::uint64_t fault_block = UINT64_MAX;  // the lowest faulting block: the first in block order
  std::string fault_message;
};

class executor;

struct slot {
  thread_context ctx;
  executor* owner = nullptr;
  unsigned linear = 0;  // x + y*dim.x + z*dim.x*dim.y; lane = linear % 32
  thread_status status = thread_status::exited;
  bool started = false;
  // the sync point waited at
  const char* file = "";
  unsigned line = 0;
  detail::shuffle_op op = detail::shuffle_op::idx;
  unsigned mask = 0;
  int lane_arg = 0;
  int width = 0;
  unsigned size = 0;
  std::uint64_t value = 0;   // what the thread sends
  std::uint64_t result = 0;  // what it receives
  bctx::fiber fiber;
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
  void* fake_stack = nullptr;  // asan's, while the fiber is switched out
};

// the slot whose fiber runs now on this OS thread
constinit thread_local slot* running = nullptr;

bool same_point(const slot& a, const slot& b) {
  return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

bool same_shuffle(const slot& a, const slot& b) {
  return b.status == thread_status::at_shuffle && a.op == b.op && a.mask == b.mask &&
         a.width == b.width && a.size == b.size;
}

// the lane a shuffle reads, as PTX defines shfl.sync with the clamp operand CUDA passes
// (c = ((32 - width) << 8) | 0x1f): segmask picks the width-lane segment, max_lane is
// its last lane, and a source past it reads the caller's own value
unsigned source_lane(detail::shuffle_op op, unsigned lane, int lane_arg, int width) {
  const unsigned segmask = (warp_lanes - static_cast<unsigned>(width)) & 0x1fu;
  const unsigned b = static_cast<unsigned>(lane_arg) & 0x1fu;
  const unsigned max_lane = (lane & segmask) | (0x1fu & ~segmask);
  unsigned j = lane;
  switch (op) {
    case detail::shuffle_op::idx:
      return (lane & segmask) | (b & ~segmask & 0x1fu);
    case detail::shuffle_op::down:
      j = lane + b;
      break;
    case detail::shuffle_op::bfly:
      j = lane ^ b;
      break;
  }
  return j <= max_lane ? j : lane;
}

std::uint64_t next_random(std::uint64_t& state) {  // splitmix64
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// runs blocks on one OS thread. Its fibers live as long as the OS thread and each runs
// one GPU thread after another, so a launch allocates nothing and creates no fiber once
// the pool is as large as the block.
//
// A round of the schedule runs every ready fiber to its next sync point or exit, in order_, then
// resolves the waits. Each fiber switches back to the scheduler, which enters the next; or, with
// chain_rounds, straight to the round's next ready fiber, the last one back to the scheduler:
// one stack switch a thread a sync point instead of two.
class executor {
 public:
  executor() = default;
  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;

  ~executor() {
    shutting_down_ = true;
    for (auto& s : slots_) enter(*s);  // each fiber returns, and boost frees its stack
    running = nullptr;
    detail::current = nullptr;
  }

  // the fault of the block, if any
  std::optional<std::string> run_block(const launch_job& job, std::uint64_t block_linear) {
    job_ = &job;
    threads_ = job.threads;
    try {
      slots_.reserve(threads_);
      while (slots_.size() < threads_) add_slot();
    } catch (const std::exception& e) {
      // no thread has started, so there is nothing to unwind
      return "simt could not create the " + std::to_string(threads_) +
             " fibers of a block (one stack mapping and guard page each): " + e.what();
    }
    const dim3 dim = job.block;
    const dim3 block_idx(static_cast<unsigned>(block_linear % job.grid.x),
                         static_cast<unsigned>(block_linear / job.grid.x % job.grid.y),
                         static_cast<unsigned>(block_linear / job.grid.x / job.grid.y));
    for (unsigned i = 0; i < threads_; ++i) {
      slot& s = *slots_[i];
      s.ctx = {dim3(i % dim.x, i / dim.x % dim.y, i / dim.x / dim.y), block_idx, job.block,
               job.grid};
      s.linear = i;
      s.status = thread_status::ready;
      s.started = false;
    }
    order_.resize(threads_);
    std::iota(order_.begin(), order_.end(), 0u);
    // the order depends on the seed and the block alone, never on the OS thread
    randomized_ = job.seed != 0;
    rng_ = job.seed ^ (0xd1b54a32d192ed03ull * (block_linear + 1));
    live_ = threads_;
    aborting_ = false;
    fault_.reset();
    try {
      schedule();
    } catch (const std::exception& e) {
      record_fault(std::string("simt scheduler failed: ") + e.what());
    }
    if (fault_) abort_block();
    running = nullptr;
    detail::current = nullptr;
    return std::move(fault_);
  }

  // fiber side: let the round go on until released; unwind if the block faulted
  void wait(slot& s) {
    leave(s);
    if (aborting_) throw abort_thread{};
  }

  void record_fault(std::string message) {
    if (!fault_) fault_ = std::move(message);
  }

  std::string who(const slot& s) const {
    return "thread " + coords(s.ctx.thread_idx) + " of block " + coords(s.ctx.block_idx);
  }

 private:
  void add_slot() {
    auto owned = std::make_unique<slot>();
    slot& s = *owned;
    s.owner = this;
    bctx::protected_fixedsize_stack allocator(fiber_stack_bytes);
    bctx::stack_context stack = allocator.allocate();
    const std::size_t guard = bctx::stack_traits::page_size();
    // each fiber's stack starts 64 bytes further into a 4 KiB page than the one before, so that
    // the tops of the stacks, touched at every switch, fall in different cache sets (the
    // mappings are a whole number of pages apart): 40 -> 35 ns a sync point in 1024-thread blocks
    const std::size_t color = (slots_.size() % 64) * 64;
    s.stack_bottom = static_cast<char*>(stack.sp) - stack.size + guard;
    s.stack_size = stack.size - guard;
    // the constructor jumps onto the new stack and straight back, so boost can set up its
    // record there. asan must hear of that round trip too, or the frame boost leaves there
    // comes from this thread's fake stack (detect_stack_use_after_return) and is reclaimed
    // under the fiber: one switch there, then one back to this stack, whose bounds the
    // first finish reports.
    void* fake_stack = nullptr;
    const void* here_bottom = nullptr;
    std::size_t here_size = 0;
    asan_start_switch(&fake_stack, s.stack_bottom, s.stack_size);
    s.fiber = bctx::fiber(
        std::allocator_arg, bctx::preallocated(static_cast<char*>(stack.sp) - color, stack.size - color, stack),
        allocator,
        [this, &s](bctx::fiber&& scheduler) { return fiber_main(s, std::move(scheduler)); });
    asan_finish_switch(nullptr, &here_bottom, &here_size);
    asan_start_switch(nullptr, here_bottom, here_size);
    asan_finish_switch(fake_stack, nullptr, nullptr);
    slots_.push_back(std::move(owned));
  }

  bctx::fiber fiber_main(slot& s, bctx::fiber&& from) {
    arrived(nullptr, std::move(from));
    while (!shutting_down_) {
      run_thread(s);
      s.status = thread_status::exited;
      --live_;
      leave(s);
    }
    // only the scheduler resumes a fiber while shutting down
    asan_start_switch(nullptr, scheduler_bottom_, scheduler_size_);
    from_ = &s;
    return std::move(scheduler_);
  }

  // no exception may leave the fiber: it would unwind across a context switch
  void run_thread(slot& s) {
    s.started = true;
    try {
      job_->invoke(job_->closure);
    } catch (const abort_thread&) {
    } catch (const fault& f) {
      record_fault(f.what());
    } catch (const std::exception& e) {
      record_fault(who(s) + " threw: " + e.what());
    } catch (...) {
      record_fault(who(s) + " threw an exception that is not a std::exception");
    }
  }

  // Every switch goes through these. The context a switch leaves is handed to the one it
  // enters (boost's resume returns it there); from_, set by the leaving side, says whose it is:
  // a fiber's, or the scheduler's (null).
  void arrived(void* fake_stack, bctx::fiber&& from) {
    const void* bottom = nullptr;
    std::size_t size = 0;
    asan_finish_switch(fake_stack, &bottom, &size);
    if (from_ == nullptr) {
      scheduler_ = std::move(from);
      scheduler_bottom_ = bottom;
      scheduler_size_ = size;
    } else {
      from_->fiber = std::move(from);
    }
  }

  // scheduler side: run s (and, in a round, the fibers it chains to) until one switches back
  void enter(slot& s) {
    running = &s;
    detail::current = &s.ctx;
    from_ = nullptr;
    void* fake_stack = nullptr;
    asan_start_switch(&fake_stack, s.stack_bottom, s.stack_size);
    bctx::fiber from = std::move(s.fiber).resume();
    arrived(fake_stack, std::move(from));
  }

  // fiber side, at a sync point or exit: on to the round's next ready fiber, else back to the
  // scheduler; returns when s is resumed
  void leave(slot& s) {
    slot* next = chaining_ ? next_ready() : nullptr;
    from_ = &s;
    bctx::fiber from;
    if (next != nullptr) {
      running = next;
      detail::current = &next->ctx;
      asan_start_switch(&s.fake_stack, next->stack_bottom, next->stack_size);
      from = std::move(next->fiber).resume();
    } else {
      asan_start_switch(&s.fake_stack, scheduler_bottom_, scheduler_size_);
      from = std::move(scheduler_).resume();
    }
    arrived(s.fake_stack, std::move(from));
  }

  // the round's next ready fiber after the cursor, none once the block has faulted
  slot* next_ready() {
    if (fault_) return nullptr;
    while (++cursor_ < order_.size()) {
      slot& s = *slots_[order_[cursor_]];
      if (s.status == thread_status::ready) return &s;
    }
    return nullptr;
  }

  // rounds: run every ready fiber to its next sync point, then resolve the waits
  void schedule() {
    for (;;) {
      if (randomized_) {
        for (std::size_t i = order_.size(); i > 1; --i)
          std::swap(order_[i - 1], order_[next_random(rng_) % i]);
      }
      // in a chain the fibers run the rest of the round themselves, so the loop ends at once
      cursor_ = std::size_t(-1);
      chaining_ = chain_rounds;
      while (slot* next = next_ready()) enter(*next);
      chaining_ = false;
      if (fault_) return;
      if (live_ == 0 || !resolve()) return;
    }
  }

  // every live thread waits: release what can be released, else fault. false: faulted
  bool resolve() {
    bool progressed = false;
    for (unsigned base = 0; base < threads_; base += warp_lanes) {
      const unsigned lanes = std::min(warp_lanes, threads_ - base);
      for (unsigned lane = 0; lane < lanes; ++lane) {
        const slot& s = *slots_[base + lane];
        if (s.status != thread_status::at_shuffle) continue;
        bool complete = true;
        for (unsigned m = s.mask; m != 0; m &= m - 1) {
          const auto j = static_cast<unsigned>(std::countr_zero(m));
          if (base + j >= threads_) {
            record_fault(shuffle_text(s) + " names lane " + std::to_string(j) +
                         ", which does not exist: the block has " + std::to_string(threads_) +
                         " threads");
            return false;
          }
          const slot& t = *slots_[base + j];
          if (t.status == thread_status::exited) {
            record_fault(shuffle_text(s) + " names lane " + std::to_string(j) + " (thread " +
                         coords(t.ctx.thread_idx) + "), which exited");
            return false;
          }
          complete = complete && same_shuffle(s, t);
        }
        if (!complete) continue;
        if (!exchange(base, s.mask)) return false;
        progressed = true;
      }
    }
    return progressed || release_barrier();
  }

  bool exchange(unsigned base, unsigned mask) {
    for (unsigned m = mask; m != 0; m &= m - 1) {
      const auto lane = static_cast<unsigned>(std::countr_zero(m));
      slot& s = *slots_[base + lane];
      const unsigned source = source_lane(s.op, lane, s.lane_arg, s.width);
      if ((mask >> source & 1u) == 0) {
        record_fault(shuffle_text(s) + " reads lane " + std::to_string(source) +
                     ", which is not in the mask");
        return false;
      }
      s.result = slots_[base + source]->value;
    }
    for (unsigned m = mask; m != 0; m &= m - 1)
      slots_[base + static_cast<unsigned>(std::countr_zero(m))]->status = thread_status::ready;
    return true;
  }

  bool release_barrier() {
    unsigned waiting = 0;
    bool one_point = true;
    const slot* first = nullptr;
    for (unsigned i = 0; i < threads_; ++i) {
      const slot& s = *slots_[i];
      if (s.status != thread_status::at_barrier) continue;
      ++waiting;
      if (first == nullptr)
        first = &s;
      else
        one_point = one_point && same_point(*first, s);
    }
    if (waiting == threads_ && one_point) {
      for (unsigned i = 0; i < threads_; ++i) slots_[i]->status = thread_status::ready;
      return true;
    }
    record_fault(stuck_text(waiting > 0 ? "barrier divergence" : "deadlock"));
    return false;
  }

  std::string shuffle_text(const slot& s) const {
    return std::string(shuffle_name(s.op)) + "(mask " + hex(s.mask) + ", width " +
           std::to_string(s.width) + ") at " + site(s.file, s.line) + " by " + who(s);
  }

  std::string waits_on(const slot& s) const {
    switch (s.status) {
      case thread_status::exited:
        return "exited";
      case thread_status::at_barrier:
        return "wait at __syncthreads() at " + site(s.file, s.line);
      case thread_status::at_shuffle: {
        const unsigned base = s.linear - s.linear % warp_lanes;
        unsigned missing = 0;
        for (unsigned m = s.mask; m != 0; m &= m - 1) {
          const auto j = static_cast<unsigned>(std::countr_zero(m));
          if (!same_shuffle(s, *slots_[base + j])) missing |= 1u << j;
        }
        return "wait at " + std::string(shuffle_name(s.op)) + "(mask " + hex(s.mask) + ", width " +
               std::to_string(s.width) + ") at " + site(s.file, s.line) + " for lanes " +
               lane_list(missing) + " of their warp";
      }
      case thread_status::ready:
        break;
    }
    return "is ready";
  }

  // what every thread of the block waits on, runs of equal waits merged
  std::string stuck_text(const char* kind) const {
    std::string text = std::string(kind) + " in block " + coords(slots_[0]->ctx.block_idx) + ": ";
    unsigned i = 0;
    while (i < threads_) {
      const std::string what = waits_on(*slots_[i]);
      unsigned j = i + 1;
      while (j < threads_ && waits_on(*slots_[j]) == what) ++j;
      if (i != 0) text += "; ";
      text += j == i + 1 ? "thread " + coords(slots_[i]->ctx.thread_idx)
                         : "threads " + coords(slots_[i]->ctx.thread_idx) + ".." +
                               coords(slots_[j - 1]->ctx.thread_idx);
      text += " " + what;
      i = j;
    }
    return text;
  }

  // unwind every started thread from its sync point; the others never start
  void abort_block() {
    aborting_ = true;
    for (unsigned i = 0; i < threads_; ++i) {
      slot& s = *slots_[i];
      if (s.started)
        while (s.status != thread_status::exited) enter(s);
      s.status = thread_status::exited;
    }
  }

  std::vector<std::unique_ptr<slot>> slots_;
  std::vector<unsigned> order_;
  bctx::fiber scheduler_;
  const void* scheduler_bottom_ = nullptr;
  std::size_t scheduler_size_ = 0;
  slot* from_ = nullptr;         // the fiber whose switch is under way; null: the scheduler
  std::size_t cursor_ = 0;       // the running fiber's place in order_, in a round
  bool chaining_ = false;        // in a round: a fiber switches on to the next ready one
  const launch_job* job_ = nullptr;
  unsigned threads_ = 0;
  unsigned live_ = 0;
  bool randomized_ = false;
  std::uint64_t rng_ = 0;
  bool aborting_ = false;
  bool shutting_down_ = false;
  std::optional<std::string> fault_;
};

executor& this_executor() {
  thread_local executor e;
  return e;
}

void run_blocks(launch_job& job) {
  executor& e = this_executor();
  for (;;) {
    const std::uint64_t b = job.next_block.fetch_add(1, std::memory_order_relaxed);
    if (b >= job.blocks || job.failed.load(std::memory_order_acquire)) return;
    if (auto message = e.run_block(job, b)) {
      std::lock_guard lock(job.fault_mutex);
      if (b < job.fault_block) {
        job.fault_block = b;
        job.fault_message = std::move(*message);
      }
      job.failed.store(true, std::memory_order_release);
    }
  }
}

// ---- settings -------------------------------------------------------------------------

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const std::uint64_t value = std::strtoull(text, &end, 0);
  if (*end != '\0' || *text == '-')
    throw fault(std::string(name) + "='" + text + "' is not an unsigned integer");
  return value;
}

std::atomic<std::uint64_t>& schedule_seed() {
  static std::atomic<std::uint64_t> seed{env_number("NORMCHECK_SIMT_SCHEDULE", 0)};
  return seed;
}

unsigned default_threads() {
  static const unsigned count = [] {
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const std::uint64_t wanted = env_number("NORMCHECK_SIMT_THREADS", 0);
    return wanted == 0 ? hardware : static_cast<unsigned>(std::min<std::uint64_t>(wanted, 4096));
  }();
  return count;
}

// ---- the OS threads -------------------------------------------------------------------

// persistent workers; the launching thread runs blocks too, so n threads are n - 1 workers
class worker_pool {
 public:
  ~worker_pool() {
    std::lock_guard launch(launch_mutex_);
    stop_workers();
  }

  void set_threads(unsigned count) { requested_.store(count, std::memory_order_relaxed); }

  void run(launch_job& job) {
    const unsigned requested = requested_.load(std::memory_order_relaxed);
    const unsigned total = requested != 0 ? requested : default_threads();
    if (total <= 1 || job.blocks <= 1) {
      run_blocks(job);
      return;
    }
    std::lock_guard launch(launch_mutex_);
    if (workers_.size() != total - 1) {
      stop_workers();
      // a new worker must count the job published below as unseen, however late it starts
      std::uint64_t seen;
      {
        std::lock_guard lock(mutex_);
        seen = epoch_;
      }
      for (unsigned i = 0; i + 1 < total; ++i) workers_.emplace_back([this, seen] { work(seen); });
    }
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      ++epoch_;
    }
    wake_.notify_all();
    run_blocks(job);
    // a worker that wakes after this finds no job: it registers as busy under the same
    // lock that publishes the job, so it has either registered by now or sees null
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return busy_ == 0; });
    job_ = nullptr;
  }

 private:
  void work(std::uint64_t seen) {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || epoch_ != seen; });
      if (stop_) return;
      seen = epoch_;
      launch_job* job = job_;
      if (job == nullptr) continue;
      ++busy_;
      lock.unlock();
      run_blocks(*job);
      lock.lock();
      if (--busy_ == 0) idle_.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
    std::lock_guard lock(mutex_);
    stop_ = false;
  }

  std::atomic<unsigned> requested_{0};
  std::mutex launch_mutex_;  // one pooled launch at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::vector<std::thread> workers_;
  launch_job* job_ = nullptr;
  std::uint64_t epoch_ = 0;
  unsigned busy_ = 0;
  bool stop_ = false;
};

worker_pool& pool() {
  static worker_pool p;
  return p;
}

void check_configuration(dim3 grid, dim3 block) {
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  std::string problem;
  if (block.x == 0 || block.y == 0 || block.z == 0)
    problem = "block " + coords(block) + " is empty";
  else if (block.x > 1024 || block.y > 1024 || block.z > 64)
    problem = "block " + coords(block) + " exceeds (1024,1024,64)";
  else if (threads > max_block_threads)
    problem = "block " + coords(block) + " has " + std::to_string(threads) +
              " threads, more than " + std::to_string(max_block_threads);
  else if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    problem = "grid " + coords(grid) + " is empty";
  else if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    problem = "grid " + coords(grid) + " exceeds (2147483647,65535,65535)";
  if (!problem.empty()) throw fault("invalid launch configuration: " + problem);
}

slot& running_slot(const char* what, const char* file, unsigned line) {
  if (running == nullptr)
    throw fault(std::string(what) + " at " + site(file, line) + " called outside a kernel");
  return *running;
}

}  // namespace

// ---- what kernels call ----------------------------------------------------------------

void detail::sync_threads(const char* file, unsigned line) {
  slot& s = running_slot("__syncthreads()", file, line);
  s.status = thread_status::at_barrier;
  s.file = file;
  s.line = line;
  s.owner->wait(s);
}

std::uint64_t detail::shuffle(shuffle_op op, unsigned mask, std::uint64_t bits, unsigned size,
                              int lane_arg, int width, const char* file, unsigned line) {
  slot& s = running_slot(shuffle_name(op), file, line);
  const unsigned lane = s.linear % warp_lanes;
  // (width & (width - 1)): a power of two without std::popcount, which is a libgcc call
  // on every shuffle unless the build targets popcnt
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    throw fault(std::string(shuffle_name(op)) + " at " + site(file, line) + " by " +
                s.owner->who(s) + ": width " + std::to_string(width) +
                " is not a power of two in [1, 32]");
  if ((mask >> lane & 1u) == 0)
    throw fault(std::string(shuffle_name(op)) + " at " + site(file, line) + " by " +
                s.owner->who(s) + ": mask " + hex(mask) + " does not name the calling lane " +
                std::to_string(lane));
  s.status = thread_status::at_shuffle;
  s.file = file;
  s.line = line;
  s.op = op;
  s.mask = mask;
  s.lane_arg = lane_arg;
  s.width = width;
  s.size = size;
  s.value = bits;
  s.owner->wait(s);
  return s.result;
}

void detail::raise_misaligned(const void* p, std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  char text[128];
  std::snprintf(text, sizeof text,
                "misaligned %zu-byte vector access at 0x%" PRIxPTR " (offset %zu mod %zu)", bytes,
                address, static_cast<std::size_t>(address % bytes), bytes);
  std::string message = text;
  if (current != nullptr)
    message +=
        " by thread " + coords(current->thread_idx) + " of block " + coords(current->block_idx);
  throw fault(message);
}

void detail::launch(kernel_invoker invoke, const void* closure, dim3 grid, dim3 block) {
  if (current != nullptr)
    throw fault("simt::launch inside a kernel: dynamic parallelism is not emulated");
  check_configuration(grid, block);
  launch_job job;
  job.invoke = invoke;
  job.closure = closure;
  job.grid = grid;
  job.block = block;
  job.threads = block.x * block.y * block.z;
  job.blocks = std::uint64_t{grid.x} * grid.y * grid.z;
  job.seed = schedule_seed().load(std::memory_order_relaxed);
  pool().run(job);
  if (job.failed.load(std::memory_order_acquire)) throw fault(job.fault_message);
}

#if NORMCHECK_SIMT_BOUNDS
}  // namespace simt

// The kernels' fixed-size arrays (__shared__ tables, registers) are indexed under the compiler's
// bounds check (-fsanitize=bounds, kernels/simt/CMakeLists.txt): an index past an array's bound is a
// kernel fault here, as an access past a __shared__ array is on a device under
// compute-sanitizer, instead of a silent write into its neighbour. The data the compiler passes
// is the sanitizer runtime's (its out-of-bounds record); the fault leaves the thread as any
// kernel fault does and fails the launch with this message.
namespace {
struct source_location {
  const char* file;
  std::uint32_t line, column;
};
struct type_descriptor {
  std::uint16_t kind, info;  // kind 0: an integer, info bit 0 signed, info >> 1 log2 of its bits
  char name[1];
};
struct out_of_bounds_record {
  source_location where;
  const type_descriptor* array;
  const type_descriptor* index;
};
}  // namespace

extern "C" [[noreturn]] __attribute__((visibility("hidden"))) void __ubsan_handle_out_of_bounds_abort(
    out_of_bounds_record* record, std::uintptr_t index) {
  const type_descriptor& t = *record->index;
  const unsigned bits = t.kind == 0 ? 1u << (t.info >> 1) : 64;
  long long value = static_cast<long long>(index);
  if (t.kind == 0 && (t.info & 1) && bits < 64)  // sign-extend a signed index held in fewer bits
    value = static_cast<long long>(index << (64 - bits)) >> (64 - bits);
  const std::string file = record->where.file;
  char text[256];
  std::snprintf(text, sizeof text, "index %lld out of the bounds of %s at %s:%u:%u", value, record->array->name,
                file.substr(file.find_last_of('/') + 1).c_str(), record->where.line, record->where.column);
  std::string message = text;
  if (simt::detail::current != nullptr)
    message += " by thread " + simt::coords(simt::detail::current->thread_idx) + " of block " +
               simt::coords(simt::detail::current->block_idx);
  throw simt::fault(message);
}
namespace simt {
#endif

void set_schedule(std::uint64_t seed) { schedule_seed().store(seed, std::memory_order_relaxed); }

void set_threads(unsigned count) { pool().set_threads(count); }

}  // namespace simt

// The running kernel thread's block and thread, for a fault handler of the harness's (a read of
// an arena's guard page names the thread that made it; harness/src/arena.cpp): false outside a
// kernel. Found by name in the plugin the runtime is linked into.
extern "C" __attribute__((visibility("default"))) bool normcheck_simt_thread(unsigned (*where)[6]) {
  const simt::thread_context* t = simt::detail::current;
  if (t == nullptr) return false;
  const unsigned out[6] = {t->block_idx.x, t->block_idx.y, t->block_idx.z,
                           t->thread_idx.x, t->thread_idx.y, t->thread_idx.z};
  std::copy(std::begin(out), std::end(out), std::begin(*where));
  return true;
}
#pragma GCC visibility pop
