// Persistent worker threads. A parallel region publishes (fn, n, chunk) and then a 64-bit state word
// holding (generation, chunk count, next chunk); every thread, the caller included, claims chunks from
// it by compare-and-swap and bumps a done counter per finished chunk. The caller returns as soon as all
// chunks are done: it never waits for a worker that has not claimed anything, so a worker that is slow
// to wake (asleep, or descheduled on a busy machine) costs nothing, and a region runs entirely on the
// caller in the worst case. Workers spin briefly between regions (decode issues hundreds of small
// regions per token, so waking from a condition variable every time would cost more than the work) and
// then sleep on a condition variable.
#include <cstdio>
#include <cstdlib>
#include "threadpool.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MLX_PAUSE() _mm_pause()
#elif defined(__aarch64__)
// ISB stalls for a few dozen cycles (YIELD is a no-op on most cores); a spin iteration must not be a
// sched_yield system call.
#define MLX_PAUSE() __asm__ __volatile__("isb" ::: "memory")
#else
#define MLX_PAUSE() std::this_thread::yield()
#endif

namespace mlx {
namespace {

thread_local bool tl_in_region = false;

// state word: generation (24 bits) | chunk count (20 bits) | next chunk (20 bits).
constexpr int kIdxBits = 20;
constexpr uint64_t kIdxMask = (uint64_t(1) << kIdxBits) - 1;
constexpr int64_t kMaxChunks = int64_t(kIdxMask);  // next chunk never exceeds the count, which fits

inline uint64_t st_idx(uint64_t s) { return s & kIdxMask; }
inline uint64_t st_count(uint64_t s) { return (s >> kIdxBits) & kIdxMask; }

class Pool {
 public:
  explicit Pool(int threads) { start(threads); }
  ~Pool() { stop(); }

  int threads() const { return threads_; }

  void resize(int threads) {
    std::lock_guard<std::mutex> g(region_mu_);
    stop();
    start(threads);
  }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    grain = grain < 1 ? 1 : grain;
    // Small work, nested regions and single-thread pools run inline: no synchronisation at all.
    if (threads_ <= 1 || n <= grain || tl_in_region) { fn(0, n); return; }
    std::unique_lock<std::mutex> region(region_mu_, std::try_to_lock);
    if (!region.owns_lock()) { fn(0, n); return; }  // another JS thread is using the pool
    // Chunks: at least `grain` items, and about 4 per thread for load balance.
    int64_t chunk = (n + int64_t(threads_) * 4 - 1) / (int64_t(threads_) * 4);
    if (chunk < grain) chunk = grain;
    int64_t count = (n + chunk - 1) / chunk;
    if (count > kMaxChunks) {
      chunk = (n + kMaxChunks - 1) / kMaxChunks;
      count = (n + chunk - 1) / chunk;
    }
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    done_.store(0, std::memory_order_relaxed);
    gen_ = (gen_ + 1) & 0xffffff;
    state_.store((gen_ << (2 * kIdxBits)) | (uint64_t(count) << kIdxBits), std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> g(mu_);
      cv_.notify_all();
    }
    tl_in_region = true;
    work();
    tl_in_region = false;
    for (int spins = 0; done_.load(std::memory_order_acquire) != count;) {
      if (++spins < 4096) MLX_PAUSE();
      else std::this_thread::yield();  // a worker holding a chunk was descheduled
    }
  }

 private:
  // Claims and runs chunks of the current region until none is left. Region parameters are read only
  // after a successful claim: the region cannot finish (and the caller cannot publish the next one)
  // while a claimed chunk is unfinished, and the release store of the state made them visible.
  void work() {
    uint64_t s = state_.load(std::memory_order_acquire);
    while (st_idx(s) < st_count(s)) {
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      const int64_t b = int64_t(st_idx(s)) * chunk_;
      const int64_t e = b + chunk_ < n_ ? b + chunk_ : n_;
      (*fn_)(b, e);
      done_.fetch_add(1, std::memory_order_acq_rel);
      s = state_.load(std::memory_order_acquire);
    }
  }

  bool has_work() const {
    const uint64_t s = state_.load(std::memory_order_seq_cst);
    return st_idx(s) < st_count(s);
  }

  void worker_main() {
    tl_in_region = true;
    for (;;) {
      int spins = 0;
      while (!has_work() && !quit_.load(std::memory_order_relaxed)) {
        if (++spins < 20000) { MLX_PAUSE(); continue; }
        std::unique_lock<std::mutex> lk(mu_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        cv_.wait(lk, [&] { return has_work() || quit_.load(); });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        spins = 0;
      }
      if (quit_.load()) return;
      work();
    }
  }

  void start(int threads) {
    threads_ = threads < 1 ? 1 : threads;
    quit_.store(false);
    for (int i = 1; i < threads_; i++) workers_.emplace_back([this] { worker_main(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      quit_.store(true);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mu_, region_mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> quit_{false};
  uint64_t gen_ = 0;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
};

int initial_threads() {
  // lib/env.js refuses a bad value before the addon loads; here only a strict parse (no atoi: "1e9"
  // would be 1, "3.5" 3) with a one-line warning for hosts that load the addon some other way.
  if (const char* env = std::getenv("MLXCEL_THREADS")) {
    if (*env) {
      char* end = nullptr;
      long n = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && n >= 1 && n <= 1024) return int(n);
      std::fprintf(stderr, "mlxcel: ignoring MLXCEL_THREADS='%s' (not a whole number from 1 to 1024)\n", env);
    }
  }
  return physical_cores();
}

Pool& pool() {
  static Pool* p = new Pool(initial_threads());  // leaked on purpose: no join at process exit
  return *p;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) { pool().run(n, grain, fn); }
int pool_threads() { return pool().threads(); }
void set_pool_threads(int n) { pool().resize(n); }

}  // namespace mlx
