//go:build wasmtime

package wasmtime

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
static int wasmsched_malloc_trim(void) { return malloc_trim(0); }
#else
static int wasmsched_malloc_trim(void) { return 0; }
#endif
*/
import "C"

// trimMalloc hands the C allocator's free memory back to the kernel.
// Cranelift allocates its working memory for a compile with malloc,
// spread over the arenas of the threads that compiled, and frees it when
// the compile ends; glibc keeps those freed pages resident for reuse that
// a scheduler, which compiles a few modules at start and on a reload,
// never makes: ~20 MiB after compiling the builtin bundles, a fifth of a
// warm process's RSS. malloc_trim(0) releases them from every arena
// (madvise MADV_DONTNEED on whole free pages). It is a no-op on C
// libraries other than glibc.
func trimMalloc() { C.wasmsched_malloc_trim() }
