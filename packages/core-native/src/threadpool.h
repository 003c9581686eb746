// A persistent pool shared by every heavy kernel. Size = physical cores unless MLXCEL_THREADS says
// otherwise. The calling thread takes part in each parallel region, so a 2-thread pool = caller + 1 worker.
#pragma once
#include <cstdint>
#include <functional>

namespace mlx {

// Runs fn(begin, end) over [0, n) split into chunks of at least `grain` items. Blocks until done.
// Nested calls (from inside a region) and calls while another JS thread owns the pool run inline.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

int pool_threads();
void set_pool_threads(int n);  // recreates the workers; n >= 1
int physical_cores();  // usable physical cores (affinity, cgroup quota; see cpu_count.cc)

}  // namespace mlx
