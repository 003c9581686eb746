// Persistent worker threads. A parallel region publishes (fn, n, grain) and bumps a generation counter;
// workers spin briefly (decode issues hundreds of tiny regions per token, so waking from a condition
// variable every time would cost more than the work) and then sleep on the condition variable.
#include "threadpool.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MLX_PAUSE() _mm_pause()
#else
#define MLX_PAUSE() std::this_thread::yield()
#endif

namespace mlx {
namespace {

thread_local bool tl_in_region = false;

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
    if (threads_ <= 1 || n <= grain || tl_in_region) { fn(0, n); return; }
    std::unique_lock<std::mutex> region(region_mu_, std::try_to_lock);
    if (!region.owns_lock()) { fn(0, n); return; }  // another JS thread is using the pool
    // Chunks: at least `grain` items, and about 4 per thread for load balance.
    int64_t chunk = (n + int64_t(threads_) * 4 - 1) / (int64_t(threads_) * 4);
    if (chunk < grain) chunk = grain;
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(threads_ - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> g(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    tl_in_region = true;
    work();
    tl_in_region = false;
    while (pending_.load(std::memory_order_acquire) != 0) MLX_PAUSE();
    fn_ = nullptr;
  }

 private:
  void work() {
    for (;;) {
      int64_t b = next_.fetch_add(chunk_, std::memory_order_relaxed);
      if (b >= n_) break;
      int64_t e = b + chunk_ < n_ ? b + chunk_ : n_;
      (*fn_)(b, e);
    }
  }

  // `seen` is the generation at the time the pool started: a region published before this thread got
  // scheduled must still be picked up, so the thread may not read the counter itself at start-up.
  void worker_main(uint64_t seen) {
    tl_in_region = true;
    for (;;) {
      int spins = 0;
      uint64_t g;
      while ((g = generation_.load(std::memory_order_acquire)) == seen && !quit_.load(std::memory_order_relaxed)) {
        if (++spins < 20000) { MLX_PAUSE(); continue; }
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen || quit_.load(); });
      }
      if (quit_.load()) return;
      seen = g;
      work();
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  void start(int threads) {
    threads_ = threads < 1 ? 1 : threads;
    quit_.store(false);
    const uint64_t g0 = generation_.load();
    for (int i = 1; i < threads_; i++) workers_.emplace_back([this, g0] { worker_main(g0); });
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
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> quit_{false};
  std::atomic<int64_t> next_{0};
  std::atomic<int> pending_{0};
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
};

int initial_threads() {
  if (const char* env = std::getenv("MLXCEL_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1 && n <= 1024) return n;
  }
  return physical_cores();
}

Pool& pool() {
  static Pool* p = new Pool(initial_threads());  // leaked on purpose: no join at process exit
  return *p;
}

}  // namespace

int physical_cores() {
  // Linux: count distinct (physical id, core id) pairs; elsewhere fall back to logical CPUs.
  std::ifstream f("/proc/cpuinfo");
  if (f) {
    std::set<std::pair<int, int>> cores;
    std::string line;
    int phys = 0, core = -1;
    while (std::getline(f, line)) {
      if (line.rfind("physical id", 0) == 0) phys = std::atoi(line.substr(line.find(':') + 1).c_str());
      else if (line.rfind("core id", 0) == 0) {
        core = std::atoi(line.substr(line.find(':') + 1).c_str());
        cores.insert({phys, core});
      }
    }
    if (!cores.empty()) return int(cores.size());
  }
  unsigned hc = std::thread::hardware_concurrency();
  return hc ? int(hc) : 1;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) { pool().run(n, grain, fn); }
int pool_threads() { return pool().threads(); }
void set_pool_threads(int n) { pool().resize(n); }

}  // namespace mlx
