#pragma once
/// @file free_heap.hpp
/// Gives the heap's free pages back to the system. What threads free stays in their malloc
/// arenas (one an arena, up to 8 a core) and in the process's resident memory: after the corpus
/// is counted and encoded on many threads, that is tens of MB beside the tables for the whole
/// run (the 2 M-word walks: 114 MB after 16 counting threads).

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace pagedw2v {

/// glibc's malloc_trim over every arena; nothing elsewhere.
inline void release_free_heap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace pagedw2v
