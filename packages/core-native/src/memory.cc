// Aligned native buffers and read-only file mappings, exposed to JS as external ArrayBuffers
// (zero-copy). Runtimes that forbid external buffers (Electron's V8 sandbox) get a copy instead.
#include <napi.h>

#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>

#include "args.h"
#include "bindings.h"

#if defined(_WIN32)
#include "win32.h"

#include <climits>
#include <cstdint>
#include <memory>
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

// Buffers of at least kLargeBytes come straight from the OS instead of the heap: fresh anonymous pages
// are already zero (no memset touching every page at allocation), and on Linux the mapping is 2 MiB
// aligned and advised for transparent huge pages. Why: the first touch of fresh memory costs a page
// fault per 4 KiB page, which on virtual machines is expensive: measured 3.7 ms per MiB on the
// development VM (a 400 MiB KV cache: 1.5 s) against 0.08 ms per MiB with huge pages. KV caches and
// other long-lived multi-MiB buffers take this path (packages/cache store.ts).
constexpr size_t kLargeBytes = size_t(2) << 20;
constexpr size_t kHugePage = size_t(2) << 20;

struct LargeBlock {
  void* base;   // what the OS returned (freed as a whole)
  size_t size;  // bytes mapped at base
  size_t bytes; // bytes the ArrayBuffer exposes (reported to V8 as external memory)
};

void free_large(LargeBlock* b) {
#if defined(_WIN32)
  ::VirtualFree(b->base, 0, MEM_RELEASE);
#else
  ::munmap(b->base, b->size);
#endif
  delete b;
}

// A zeroed block of at least n bytes, or nullptr (out of memory / address space).
LargeBlock* alloc_large(size_t n) {
  const size_t rounded = (n + kHugePage - 1) / kHugePage * kHugePage;
#if defined(_WIN32)
  void* p = ::VirtualAlloc(nullptr, rounded, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
  if (!p) return nullptr;
  return new LargeBlock{p, rounded, n};
#else
  // Map one huge page more than needed, then unmap the misaligned head and the tail so the block starts
  // on a 2 MiB boundary (THP only backs aligned 2 MiB ranges).
  const size_t span = rounded + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t a = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (a + kHugePage - 1) / kHugePage * kHugePage;
  if (start > a) ::munmap(raw, start - a);
  const uintptr_t end = start + rounded;
  if (a + span > end) ::munmap(reinterpret_cast<void*>(end), a + span - end);
  void* p = reinterpret_cast<void*>(start);
#if defined(MADV_HUGEPAGE)
  ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the pages are simply 4 KiB ones
#endif
  return new LargeBlock{p, rounded, n};
#endif
}

Napi::Value Alloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t bytes = int_arg(info[0], "alloc", "bytes", 0, int64_t(1) << 46);
  size_t n = size_t(bytes);
  if (n >= kLargeBytes) {
    LargeBlock* b = alloc_large(n);
    if (!b) throw Napi::Error::New(env, "alloc: out of memory allocating " + std::to_string(n) + " bytes");
    napi_value raw;
    napi_status st = napi_create_external_arraybuffer(
        env, b->base, n,
        [](napi_env e, void*, void* hint) {
          LargeBlock* blk = static_cast<LargeBlock*>(hint);
          int64_t adjusted = 0;
          napi_adjust_external_memory(e, -int64_t(blk->bytes), &adjusted);
          free_large(blk);
        },
        b, &raw);
    if (st == napi_ok) {
      // V8 learns of the memory it cannot see, so dropped buffers are collected in time.
      int64_t adjusted = 0;
      napi_adjust_external_memory(env, int64_t(n), &adjusted);
      return Napi::Value(env, raw);
    }
    free_large(b);
    return Napi::ArrayBuffer::New(env, n);  // external buffers not allowed: a V8-owned (zeroed) buffer
  }
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

#if defined(_WIN32)
// ---- Windows helpers ----------------------------------------------------------------------------

// Closes a kernel handle on every exit path. Read GetLastError() before one of these goes out of scope:
// CloseHandle may overwrite it.
struct WinHandle {
  HANDLE h = nullptr;
  explicit WinHandle(HANDLE v) : h(v) {}
  WinHandle(const WinHandle&) = delete;
  WinHandle& operator=(const WinHandle&) = delete;
  ~WinHandle() {
    if (h && h != INVALID_HANDLE_VALUE) ::CloseHandle(h);
  }
  bool ok() const { return h && h != INVALID_HANDLE_VALUE; }
};

// A mapped view and the file handle kept open beside it; released when the ArrayBuffer is collected.
struct WinMapping {
  void* addr = nullptr;
  HANDLE file = INVALID_HANDLE_VALUE;
  WinMapping() = default;
  WinMapping(const WinMapping&) = delete;
  WinMapping& operator=(const WinMapping&) = delete;
  ~WinMapping() {
    if (addr) ::UnmapViewOfFile(addr);
    if (file != INVALID_HANDLE_VALUE) ::CloseHandle(file);
  }
};

std::string narrow(const wchar_t* w, int wlen) {
  if (wlen <= 0) return std::string();
  int n = ::WideCharToMultiByte(CP_UTF8, 0, w, wlen, nullptr, 0, nullptr, nullptr);
  if (n <= 0) return std::string();
  std::string out(size_t(n), '\0');
  ::WideCharToMultiByte(CP_UTF8, 0, w, wlen, &out[0], n, nullptr, nullptr);
  return out;
}

// The system's text for a Win32 error code, in UTF-8, without the trailing period and line break (like
// strerror), followed by the code: "The system cannot find the file specified (error 2)".
std::string win_error_text(DWORD code) {
  wchar_t* buf = nullptr;
  DWORD len = ::FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0,
      reinterpret_cast<wchar_t*>(&buf), 0, nullptr);
  std::string text;
  if (len > 0 && buf) {
    while (len > 0 && (buf[len - 1] == L'\r' || buf[len - 1] == L'\n' || buf[len - 1] == L' ' || buf[len - 1] == L'.'))
      --len;
    text = narrow(buf, int(len));
  }
  if (buf) ::LocalFree(buf);
  if (text.empty()) return "Windows error " + std::to_string(code);
  return text + " (error " + std::to_string(code) + ")";
}

// UTF-8 -> UTF-16. False (with the reason in *err) when the text is not valid UTF-8.
bool widen(const std::string& s, std::wstring* out, DWORD* err) {
  out->clear();
  if (s.empty()) return true;
  if (s.size() > size_t(INT_MAX)) {
    *err = ERROR_FILENAME_EXCED_RANGE;
    return false;
  }
  int n = ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s.data(), int(s.size()), nullptr, 0);
  if (n <= 0) {
    *err = ::GetLastError();
    return false;
  }
  out->resize(size_t(n));
  ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s.data(), int(s.size()), &(*out)[0], n);
  return true;
}

// Paths of MAX_PATH characters or more only open through the \\?\ prefix (unless the process opted into
// long paths), which in turn needs a full, normalised path: the same thing Node's fs does with
// path.toNamespacedPath. Shorter paths, and anything this cannot resolve, are returned unchanged.
std::wstring long_path(const std::wstring& p) {
  if (p.size() < MAX_PATH) return p;
  if (p.compare(0, 4, L"\\\\?\\") == 0 || p.compare(0, 4, L"\\\\.\\") == 0) return p;
  DWORD n = ::GetFullPathNameW(p.c_str(), 0, nullptr, nullptr);
  if (n == 0) return p;
  std::wstring full(size_t(n), L'\0');
  n = ::GetFullPathNameW(p.c_str(), n, &full[0], nullptr);
  if (n == 0 || n >= full.size()) return p;
  full.resize(n);
  if (full.compare(0, 4, L"\\\\?\\") == 0 || full.compare(0, 4, L"\\\\.\\") == 0) return full;
  if (full.compare(0, 2, L"\\\\") == 0) return L"\\\\?\\UNC\\" + full.substr(2);
  return L"\\\\?\\" + full;
}
#else
struct Mapping {
  void* addr = nullptr;
  size_t len = 0;
};
#endif

// Maps a whole file read-only with copy-on-write pages: the file can never be modified through the
// mapping, and a stray JS write lands in a private page instead of crashing the process. An empty file
// gives an empty (V8-owned) ArrayBuffer. The mapping is released when the ArrayBuffer is collected.
// Errors name the file and give the OS's reason.
Napi::Value MapFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw_type(env, "mmapFile: path must be a string");
  std::string path = info[0].As<Napi::String>().Utf8Value();
#if defined(_WIN32)
  std::wstring wpath;
  DWORD conv_err = 0;
  if (!widen(path, &wpath, &conv_err))
    throw Napi::Error::New(env, "mmapFile: cannot open '" + path + "': " + win_error_text(conv_err));
  // Owns the view and the file handle from here on, so every error path below releases them; allocated
  // up front so nothing can throw between MapViewOfFile and the hand-off to the ArrayBuffer.
  auto m = std::make_unique<WinMapping>();
  // FILE_SHARE_READ | FILE_SHARE_DELETE: other readers are fine and the file can still be renamed (moved
  // aside so a new one takes its name); writers are refused for as long as the handle is open (their
  // changes would show through pages not yet copied), which is why the finalizer, not this function,
  // closes it: share access ends with the last handle, not with the last view.
  m->file = ::CreateFileW(long_path(wpath).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr,
                          OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (m->file == INVALID_HANDLE_VALUE) {
    DWORD e = ::GetLastError();
    throw Napi::Error::New(env, "mmapFile: cannot open '" + path + "': " + win_error_text(e));
  }
  LARGE_INTEGER size;
  if (!::GetFileSizeEx(m->file, &size)) {
    DWORD e = ::GetLastError();
    throw Napi::Error::New(env, "mmapFile: cannot stat '" + path + "': " + win_error_text(e));
  }
  uint64_t size64 = uint64_t(size.QuadPart);
  if (sizeof(size_t) < sizeof(uint64_t) && size64 > uint64_t(SIZE_MAX))
    throw Napi::Error::New(env, "mmapFile: mmap of '" + path + "' failed: " + win_error_text(ERROR_NOT_ENOUGH_MEMORY));
  size_t len = size_t(size64);
  // As on POSIX: an empty file gives an empty buffer (CreateFileMapping refuses an empty file anyway).
  if (len == 0) return Napi::ArrayBuffer::New(env, 0);
  // PAGE_WRITECOPY + FILE_MAP_COPY = MAP_PRIVATE with PROT_READ | PROT_WRITE. The section is sized to what
  // GetFileSizeEx saw, so a file truncated in between fails here rather than faulting later.
  {
    WinHandle section(::CreateFileMappingW(m->file, nullptr, PAGE_WRITECOPY, DWORD(size64 >> 32),
                                           DWORD(size64 & 0xffffffffu), nullptr));
    if (!section.ok()) {
      DWORD e = ::GetLastError();
      throw Napi::Error::New(env, "mmapFile: mmap of '" + path + "' failed: " + win_error_text(e));
    }
    m->addr = ::MapViewOfFile(section.h, FILE_MAP_COPY, 0, 0, len);
    if (!m->addr) {
      DWORD e = ::GetLastError();
      std::string msg = "mmapFile: mmap of '" + path + "' failed: " + win_error_text(e);
      // A copy-on-write view is charged against the commit limit for its whole size when it is mapped.
      if (e == ERROR_COMMITMENT_LIMIT || e == ERROR_NOT_ENOUGH_MEMORY || e == ERROR_COMMITMENT_MINIMUM)
        msg += "; a copy-on-write mapping needs its full size in commit charge (RAM + paging file)";
      throw Napi::Error::New(env, msg);
    }
    // The section handle closes here: the view keeps the section alive until UnmapViewOfFile.
  }
  napi_value raw;
  napi_status s = napi_create_external_arraybuffer(
      env, m->addr, len, [](napi_env, void*, void* hint) { delete static_cast<WinMapping*>(hint); }, m.get(), &raw);
  if (s == napi_ok) {
    static_cast<void>(m.release());  // the ArrayBuffer's finalizer owns it now
    return Napi::Value(env, raw);
  }
  // Copying fallback for runtimes without external buffers; `m` unmaps and closes on the way out.
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, len);
  std::memcpy(ab.Data(), m->addr, len);
  return ab;
#else
  // O_NONBLOCK: opening a FIFO (or a device) read-only would otherwise block until a writer appears;
  // with it open() returns at once and the S_ISREG check below refuses anything that is not a regular
  // file (FIFO, directory, device, socket). It does not affect reads of a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) throw Napi::Error::New(env, "mmapFile: cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Napi::Error::New(env, "mmapFile: cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file";
    throw Napi::Error::New(env, "mmapFile: '" + path + "' is " + kind + " (only regular files are mapped)");
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

// releasePages(view): asks the OS to reclaim the whole pages inside a view's bytes (Linux
// MADV_PAGEOUT). Used on a checkpoint's file mapping after the weights were copied out of it: the
// file-backed pages are clean, so the kernel just drops them (a later read faults them in again from
// the file; no value changes), and they stop counting towards the process's resident memory. Anonymous
// memory is only swapped out (nothing is lost either). Returns the bytes advised; 0 where the OS has no
// such advice (macOS, Windows, Linux < 5.4), which is harmless: the pages simply stay.
Napi::Value ReleasePages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !(info[0].IsTypedArray() || info[0].IsArrayBuffer() || info[0].IsDataView()))
    throw_type(env, "releasePages: view must be an ArrayBuffer or ArrayBufferView");
  uint8_t* base = nullptr;
  size_t len = 0;
  if (info[0].IsArrayBuffer()) {
    Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
    base = static_cast<uint8_t*>(ab.Data());
    len = ab.ByteLength();
  } else if (info[0].IsTypedArray()) {
    Napi::TypedArray t = info[0].As<Napi::TypedArray>();
    base = static_cast<uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
    len = t.ByteLength();
  } else {
    Napi::DataView d = info[0].As<Napi::DataView>();
    base = static_cast<uint8_t*>(d.ArrayBuffer().Data()) + d.ByteOffset();
    len = d.ByteLength();
  }
#if defined(__linux__)
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t a = (reinterpret_cast<uintptr_t>(base) + page - 1) / page * page;  // whole pages only:
  const uintptr_t b = (reinterpret_cast<uintptr_t>(base) + len) / page * page;       // neighbours keep theirs
  if (base && b > a && ::madvise(reinterpret_cast<void*>(a), b - a, MADV_PAGEOUT) == 0) return Napi::Number::New(env, double(b - a));
#else
  (void)base;
  (void)len;
#endif
  return Napi::Number::New(env, 0);
}

}  // namespace

void RegisterMemory(Napi::Env env, Napi::Object exports) {
  exports.Set("releasePages", Napi::Function::New(env, ReleasePages, "releasePages"));
  exports.Set("alloc", Napi::Function::New(env, Alloc, "alloc"));
  exports.Set("mmapFile", Napi::Function::New(env, MapFile, "mmapFile"));
}

}  // namespace mlx
