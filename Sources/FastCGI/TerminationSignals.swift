import Synchronization
package import Threads

#if canImport(Glibc)
    internal import Glibc
#endif

/// Graceful stop on SIGTERM and SIGINT.
///
/// libfcgi installs its own SIGTERM handler that only sets a flag, so a libfcgi process would not stop
/// (docs/PERFORMANCE.md, "libfcgi and SIGTERM"). Instead the signals are blocked in every thread and one thread takes them with
/// `sigwait`, then runs the stop action (normally `Listener.shutdown()`).
package enum TerminationSignals {
    /// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts afterwards, and
    /// ignores SIGPIPE (a client that went away must not kill the process). Call first in `main`.
    package static func block() {
        var set = terminationSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
        signal(SIGPIPE, SIG_IGN)
    }

    /// Starts a thread that waits for SIGTERM or SIGINT and then calls `action` with the signal number.
    /// - Returns: the thread, which ends after `action`; join it once the process is stopping, or
    ///   end it sooner with `stop(_:)`.
    /// - Throws: `FastCGIError(.threadStart)`.
    package static func onTermination(_ action: @escaping @Sendable (Int32) -> Void) throws(FastCGIError) -> OwnedThread {
        do {
            return try OwnedThread(name: "siwa-signals") { context in
                var set = terminationSet()
                var received: Int32 = 0
                while sigwait(&set, &received) != 0 {}
                // Woken by `stop(_:)`, not by a signal from outside: nothing to act on.
                guard !context.isStopping else { return }
                action(received)
            }
        } catch {
            throw FastCGIError(.threadStart, reason: "pthread_create failed", errno: error.code)
        }
    }

    /// Ends a thread of `onTermination` without its action, if no signal came, and joins it (a
    /// process that stops for another reason, such as a service that could not start).
    package static func stop(_ thread: OwnedThread) {
        thread.stop()
        // SIGTERM is blocked in every thread: sent to this one, its `sigwait` takes it.
        thread.deliver(signal: SIGTERM)
        thread.join()
    }

    /// The signal thread as a service of the process: `action` runs on SIGTERM or SIGINT; the
    /// service's stop joins the thread, ending it first when no signal came.
    package static func service(_ action: @escaping @Sendable (Int32) -> Void) -> Service {
        let thread = Mutex<OwnedThread?>(nil)
        return Service(
            "signal thread",
            start: {
                let started = try onTermination(action)
                thread.withLock { $0 = started }
            },
            stop: {
                if let started = thread.withLock({ $0 }) { stop(started) }
            })
    }

    private static func terminationSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        return set
    }
}
