internal import CMalloc

/// What this process's malloc (glibc's) holds: the one importer of `CMalloc`.
package enum Allocator {
    /// The bytes malloc has handed out and not had back, in every arena and in its own mappings
    /// (`mallinfo2`'s `uordblks` and `hblkhd`): what the process's data takes, without what malloc
    /// keeps free.
    package static var allocatedBytes: Int { Int(CMalloc_allocatedBytes()) }

    /// Gives the free memory of every arena back to the system (`malloc_trim(0)`): every whole
    /// free page, wherever it lies in its arena, not only at an arena's top.
    ///
    /// glibc gives each thread that allocates at once with another an arena of its own (up to
    /// eight per core), and memory freed into an arena is reused only by the threads that allocate
    /// from it: what one thread frees (a cache's evicted entries) can stay resident, unused, while
    /// other threads take new pages. It walks every arena under its lock: call it after freeing
    /// megabytes, not per allocation.
    package static func releaseFreeMemory() { _ = malloc_trim(0) }
}
