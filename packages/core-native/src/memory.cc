// Aligned native buffers and read-only file mappings, exposed to JS as external ArrayBuffers
// (zero-copy). Runtimes that forbid external buffers (Electron's V8 sandbox) get a copy instead.
#include <napi.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "args.h"
#include "bindings.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace mlx {
namespace {

constexpr size_t kAlign = 64;

void free_aligned(Napi::Env, void* p) {
#if defined(_WIN32)
  _aligned_free(p);
#else
  std::free(p);
#endif
}

Napi::Value Alloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t bytes = int_arg(info[0], "alloc", "bytes", 0, int64_t(1) << 46);
  size_t n = size_t(bytes);
  size_t padded = (n + kAlign - 1) / kAlign * kAlign;
  if (padded == 0) padded = kAlign;
#if defined(_WIN32)
  void* p = _aligned_malloc(padded, kAlign);
#else
  void* p = nullptr;
  if (posix_memalign(&p, kAlign, padded) != 0) p = nullptr;
#endif
  if (!p) throw Napi::Error::New(env, "alloc: out of memory allocating " + std::to_string(n) + " bytes");
  std::memset(p, 0, padded);
  Napi::ArrayBuffer ab;
  napi_value raw;
  napi_status st = napi_create_external_arraybuffer(
      env, p, n, [](napi_env, void* data, void*) { free_aligned(Napi::Env(nullptr), data); }, nullptr, &raw);
  if (st == napi_ok) return Napi::Value(env, raw);
  // External buffers not allowed: copy into a V8-owned buffer (alignment then follows V8's allocator).
  ab = Napi::ArrayBuffer::New(env, n);
  free_aligned(env, p);
  return ab;
}

struct Mapping {
  void* addr = nullptr;
  size_t len = 0;
};

Napi::Value MapFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw_type(env, "mmapFile: path must be a string");
  std::string path = info[0].As<Napi::String>().Utf8Value();
#if defined(_WIN32)
  throw Napi::Error::New(env, "mmapFile: not implemented on Windows yet; read the file instead");
#else
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Napi::Error::New(env, "mmapFile: cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Napi::Error::New(env, "mmapFile: cannot stat '" + path + "': " + std::strerror(e));
  }
  size_t len = size_t(st.st_size);
  if (len == 0) {
    ::close(fd);
    return Napi::ArrayBuffer::New(env, 0);
  }
  // MAP_PRIVATE + PROT_WRITE: the file can never be modified through this mapping, and a stray JS write
  // lands in a private copy-on-write page instead of crashing the process.
  void* addr = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (addr == MAP_FAILED) throw Napi::Error::New(env, "mmapFile: mmap of '" + path + "' failed: " + std::strerror(e));
  auto* m = new Mapping{addr, len};
  napi_value raw;
  napi_status s = napi_create_external_arraybuffer(
      env, addr, len,
      [](napi_env, void*, void* hint) {
        auto* mm = static_cast<Mapping*>(hint);
        ::munmap(mm->addr, mm->len);
        delete mm;
      },
      m, &raw);
  if (s == napi_ok) return Napi::Value(env, raw);
  // Copying fallback for runtimes without external buffers.
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, len);
  std::memcpy(ab.Data(), addr, len);
  ::munmap(addr, len);
  delete m;
  return ab;
#endif
}

}  // namespace

void RegisterMemory(Napi::Env env, Napi::Object exports) {
  exports.Set("alloc", Napi::Function::New(env, Alloc, "alloc"));
  exports.Set("mmapFile", Napi::Function::New(env, MapFile, "mmapFile"));
}

}  // namespace mlx
