// The C runtime of the 32-bit check: what Embedded Swift needs from a C library, for
// wasm32 under WASI (preview 1), in a few dozen lines: an allocator, the memory functions,
// putchar, random bytes, exit, 128-bit multiplication (no compiler-rt for wasm32 ships with
// the toolchain), and _start. Compiled freestanding; no libc, no sysroot.
#include "runtime.h"

typedef unsigned char u8;
typedef uint32_t u32;
typedef uint64_t u64;

#define WASI(name) __attribute__((import_module("wasi_snapshot_preview1"), import_name(name)))
WASI("fd_write") int wasi_fd_write(int fd, const void *iovs, size_t count, size_t *written);
WASI("proc_exit") void wasi_proc_exit(int code) __attribute__((noreturn));
WASI("random_get") int wasi_random_get(void *buffer, size_t length);
WASI("args_sizes_get") int wasi_args_sizes_get(size_t *count, size_t *bytes);
WASI("args_get") int wasi_args_get(char **argv, char *buffer);
WASI("clock_time_get") int wasi_clock_time_get(u32 clock, u64 precision, u64 *time);

// MARK: Output

static char out_buffer[4096];
static size_t out_used;

static void flush(void) {
  struct { const void *base; size_t length; } iov = {out_buffer, out_used};
  size_t written;
  if (out_used) wasi_fd_write(1, &iov, 1, &written);
  out_used = 0;
}

int putchar(int c) {
  out_buffer[out_used++] = (char)c;
  if (c == '\n' || out_used == sizeof out_buffer) flush();
  return c;
}

void check32_exit(int code) {
  flush();
  wasi_proc_exit(code);
}
void exit(int code) { check32_exit(code); }
void abort(void) { check32_exit(134); }

// MARK: Memory
//
// Power-of-two size classes with a free list each; a 16-byte header before every block holds
// its class. Fresh blocks come from the end of the heap, which grows with memory.grow.

#define HEADER 16
extern u8 __heap_base;
static size_t heap_top;
static void *free_lists[33];

static int size_class(size_t n) {
  int k = 4;
  while (((size_t)1 << k) < n) k++;
  return k;
}

void *malloc(size_t n) {
  if (n > ((size_t)1 << 31)) return 0;
  int k = size_class(n);
  if (free_lists[k]) {
    void *block = free_lists[k];
    free_lists[k] = *(void **)block;
    return block;
  }
  if (!heap_top) heap_top = ((size_t)&__heap_base + 15) & ~(size_t)15;
  size_t block = heap_top + HEADER;
  size_t end = block + ((size_t)1 << k);
  if (end < block) return 0;
  size_t have = __builtin_wasm_memory_size(0) * 65536;
  if (end > have) {
    size_t pages = (end - have + 65535) / 65536;
    if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return 0;
  }
  heap_top = end;
  ((u32 *)(block - HEADER))[0] = (u32)k;
  ((u32 *)(block - HEADER))[1] = 0;  // bytes back to the block, for aligned allocations
  return (void *)block;
}

void free(void *p) {
  if (!p) return;
  u32 back = ((u32 *)((u8 *)p - HEADER))[1];
  u8 *block = (u8 *)p - back;
  int k = (int)((u32 *)(block - HEADER))[0];
  *(void **)block = free_lists[k];
  free_lists[k] = block;
}

void *memset(void *d, int c, size_t n) {
  __builtin_memset(d, c, n);  // memory.fill (bulk memory)
  return d;
}
void *memcpy(void *d, const void *s, size_t n) {
  __builtin_memmove(d, s, n);  // memory.copy
  return d;
}
void *memmove(void *d, const void *s, size_t n) {
  __builtin_memmove(d, s, n);
  return d;
}
int memcmp(const void *x, const void *y, size_t n) {
  const u8 *a = x, *b = y;
  for (; n; n--, a++, b++)
    if (*a != *b) return *a < *b ? -1 : 1;
  return 0;
}
size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

void *calloc(size_t a, size_t b) {
  if (b && a > (size_t)-1 / b) return 0;
  void *p = malloc(a * b);
  if (p) memset(p, 0, a * b);
  return p;
}

void *realloc(void *p, size_t n) {
  if (!p) return malloc(n);
  u32 back = ((u32 *)((u8 *)p - HEADER))[1];
  u8 *block = (u8 *)p - back;
  size_t have = ((size_t)1 << ((u32 *)(block - HEADER))[0]) - back;
  if (n <= have) return p;
  void *q = malloc(n);
  if (q) { memcpy(q, p, have); free(p); }
  return q;
}

int posix_memalign(void **out, size_t alignment, size_t n) {
  if (alignment <= HEADER) {
    *out = malloc(n);
    return *out ? 0 : 12;
  }
  u8 *block = malloc(n + alignment);
  if (!block) return 12;
  u8 *p = (u8 *)(((size_t)block + alignment - 1) & ~(alignment - 1));
  if (p != block) ((u32 *)(p - HEADER))[1] = (u32)(p - block);
  *out = p;
  return 0;
}
void *aligned_alloc(size_t alignment, size_t n) {
  void *p;
  return posix_memalign(&p, alignment, n) ? 0 : p;
}

size_t check32_memory_used(void) {
  return heap_top ? heap_top - (size_t)&__heap_base : 0;
}

uint64_t check32_nanoseconds(void) {
  u64 time = 0;
  wasi_clock_time_get(1, 1000, &time);  // the monotonic clock
  return time;
}

// MARK: Randomness: WASI's, or a SplitMix64 sequence from the run's seed when there is one,
// so that a run (KeyHash's seed included) can be repeated.

static u64 seed, rng_state;

uint64_t check32_seed(void) { return seed; }

static u64 splitmix(void) {
  u64 z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void arc4random_buf(void *buffer, size_t n) {
  if (!seed) { wasi_random_get(buffer, n); return; }
  u8 *b = buffer;
  while (n) {
    u64 r = splitmix();
    for (int i = 0; i < 8 && n; i++, n--) *b++ = (u8)(r >> (8 * i));
  }
}

// MARK: 128-bit multiplication (UInt64.multipliedFullWidth). wasm32 passes an __int128 as
// two i64 and returns one through a pointer.

typedef struct { u64 low, high; } u128;
static u64 multiply_high(u64 a, u64 b) {
  u64 a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  u64 middle = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
}
void __multi3(u128 *result, u64 alow, u64 ahigh, u64 blow, u64 bhigh) {
  result->low = alow * blow;
  result->high = multiply_high(alow, blow) + alow * bhigh + ahigh * blow;
}

size_t __stack_chk_guard = 0x5a5a5a5a;
void __stack_chk_fail(void) { check32_exit(135); }

// MARK: Entry

int __main_argc_argv(int argc, char **argv);

void _start(void) {
  size_t count = 0, bytes = 0;
  char *argv[8] = {0};
  static char arguments[256];
  if (wasi_args_sizes_get(&count, &bytes) == 0 && count <= 8 && bytes <= sizeof arguments) {
    wasi_args_get(argv, arguments);
    if (count > 1)
      for (const char *p = argv[1]; *p >= '0' && *p <= '9'; p++) seed = seed * 10 + (u64)(*p - '0');
  } else {
    count = 0;
  }
  rng_state = seed;
  check32_exit(__main_argc_argv((int)count, argv));
}
