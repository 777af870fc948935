#if canImport(Glibc)
    import Glibc
#endif

/// A value each thread has its own copy of (a pthread key): made on the thread's first use from
/// `initial`, freed when the thread ends.
///
/// For process-lifetime state only: keep it in a `static let`. Its key is never deleted (a key's
/// deletion would leave the values of the threads still running unreleased), so a `ThreadLocal`
/// that goes away leaks its key.
package final class ThreadLocal<Value>: Sendable {
    /// The key; each thread's value is a retained `Box` (+1, released by the key's destructor when
    /// the thread ends).
    private let key: pthread_key_t
    private let initial: @Sendable () -> Value

    /// - Parameter initial: the value of a thread that has not used it yet.
    package init(initial: @escaping @Sendable () -> Value) {
        var key = pthread_key_t()
        // Only fails when the process is out of keys (PTHREAD_KEYS_MAX, 1024): a programmer error.
        let result = pthread_key_create(&key) { box in
            guard let box else { return }
            Unmanaged<AnyObject>.fromOpaque(box).release()
        }
        precondition(result == 0, "pthread_key_create failed (\(result))")
        self.key = key
        self.initial = initial
    }

    /// Gives `body` the calling thread's value to read or change in place. Never leaves the
    /// thread: no other thread sees it.
    @inline(__always)
    package func withValue<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        try body(&box.value)
    }

    /// The calling thread's value.
    package var value: Value {
        get { box.value }
        set { box.value = newValue }
    }

    /// The calling thread's box, made on its first use.
    private var box: Box {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Box>.fromOpaque(pointer).takeUnretainedValue() }
        let box = Box(initial())
        pthread_setspecific(key, Unmanaged.passRetained(box).toOpaque())
        return box
    }

    /// One thread's value, in a class so that the key's destructor (a C function, without the
    /// value's type) can release it.
    private final class Box {
        var value: Value

        init(_ value: Value) { self.value = value }
    }
}
