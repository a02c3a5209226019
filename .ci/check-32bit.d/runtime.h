// What the 32-bit check's Swift code sees of runtime.c: imported with -import-objc-header,
// so the engine's IO files (IndexMemory.swift, ByteComparison.swift) find calloc, free and
// memcmp as they would in the C library.
#include <stddef.h>
#include <stdint.h>

void *calloc(size_t count, size_t size);
void free(void *pointer);
int memcmp(const void *a, const void *b, size_t count);

/// The run's seed: the first command-line argument (decimal), or 0 without one.
uint64_t check32_seed(void);
/// Flushes standard output and ends the program with `code`.
void check32_exit(int code) __attribute__((noreturn));
/// The monotonic clock, in nanoseconds.
uint64_t check32_nanoseconds(void);
/// Bytes of linear memory in use (the allocator's high-water mark).
size_t check32_memory_used(void);
