internal import CoreMetrics
import Foundation
internal import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Something a thread holds open and must close before it ends, such as a database connection.
package protocol ThreadOwnedResource: AnyObject {
    func close()
}

/// Why a thread could not be started.
package struct ThreadStartError: Error, CustomStringConvertible {
    /// The `pthread_create` result.
    package let code: Int32

    package var description: String { "pthread_create failed: \(String(cString: strerror(code))) (\(code))" }
}

/// A thread that belongs to the object that started it: the one way threads are started here.
/// The long-lived ones belong to a service of the process's `ServiceGroup`.
///
/// Its owner starts it, may ask it to stop (`stop()`: its body sees `isStopping` and a
/// `waitForStop(timeout:)` returns early), and joins it (`join()`) before the owner goes away, so
/// that no thread outlives what it works for. The resources it owns (`own(_:)`) are closed when its
/// body returns, whichever way.
package final class OwnedThread: Sendable {
    private let thread: pthread_t
    private let control: Control

    /// Starts a thread running `body`, which receives the thread itself (to check `isStopping`,
    /// wait, and own resources).
    /// - Parameter name: the thread's name, as debuggers and `top -H` show it (its first 15 bytes).
    /// - Throws: `ThreadStartError` when the system refuses a new thread.
    package init(name: String, _ body: @escaping @Sendable (OwnedThread.Context) -> Void) throws(ThreadStartError) {
        let control = Control()
        let start = Start(name: name, control: control, body: body)
        let context = Unmanaged.passRetained(start).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Start>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw ThreadStartError(code: result)
        }
        self.thread = thread
        self.control = control
    }

    /// Starts a thread that a service starts lazily, on first use, where a failed start must not
    /// fail the caller (a request): when the system refuses the thread, the failure is logged
    /// (error, `siwa.threads`) and counted (`siwa_thread_start_failures_total{thread}`), and the
    /// caller goes on without it, as it documents.
    /// - Returns: the thread; nil when it could not start.
    package static func startIfPossible(name: String, _ body: @escaping @Sendable (OwnedThread.Context) -> Void) -> OwnedThread? {
        do {
            return try OwnedThread(name: name, body)
        } catch {
            Logger(label: "siwa.threads").error("a thread could not start", metadata: ["thread": "\(name)", "error": "\(error)"])
            Counter(label: "siwa_thread_start_failures_total", dimensions: [("thread", name)]).increment()
            return nil
        }
    }

    /// Sends `signal` to the thread (`pthread_kill`): wakes a thread blocked in `sigwait` for it.
    /// Does nothing once the thread has been joined.
    package func deliver(signal: Int32) {
        control.joinLock.lock()
        defer { control.joinLock.unlock() }
        guard !control.joined else { return }
        pthread_kill(thread, signal)
    }

    /// Asks the thread to stop: `isStopping` becomes true and its waits end. Does not wait.
    package func stop() {
        control.condition.lock()
        control.stopping = true
        control.condition.broadcast()
        control.condition.unlock()
    }

    /// Waits until the thread has finished. Only the first call joins; later ones return at once
    /// after it has. Never call it from the thread itself.
    package func join() {
        control.joinLock.lock()
        defer { control.joinLock.unlock() }
        guard !control.joined else { return }
        pthread_join(thread, nil)
        control.joined = true
    }

    /// `stop()`, then `join()`.
    package func stopAndJoin() {
        stop()
        join()
    }

    /// What the thread's body sees of its thread.
    package struct Context: Sendable {
        fileprivate let control: Control

        /// Whether the owner asked the thread to stop.
        package var isStopping: Bool {
            control.condition.lock()
            defer { control.condition.unlock() }
            return control.stopping
        }

        /// Sleeps up to `timeout` seconds, or until the owner asks the thread to stop.
        /// - Returns: whether the thread is to stop.
        @discardableResult
        package func waitForStop(timeout: Double) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            control.condition.lock()
            defer { control.condition.unlock() }
            while !control.stopping {
                if !control.condition.wait(until: deadline) { break }
            }
            return control.stopping
        }

        /// Hands `resource` to the thread, which closes it when its body returns.
        package func own(_ resource: some ThreadOwnedResource) {
            control.condition.lock()
            control.owned.append(resource)
            control.condition.unlock()
        }
    }

    /// The state shared by the owner and the thread.
    fileprivate final class Control: @unchecked Sendable {
        // `stopping` and `owned` are guarded by `condition`; `joined` by `joinLock`.
        let condition = NSCondition()
        let joinLock = NSLock()
        var stopping = false
        var owned: [any ThreadOwnedResource] = []
        var joined = false

        /// Closes what the thread owns, last owned first.
        func closeOwned() {
            condition.lock()
            let owned = self.owned
            self.owned = []
            condition.unlock()
            for resource in owned.reversed() { resource.close() }
        }
    }

    /// Boxes the body so it can cross `pthread_create`'s C boundary (+1 retained, released by the thread).
    private final class Start: @unchecked Sendable {
        let name: String
        let control: Control
        let body: @Sendable (Context) -> Void

        init(name: String, control: Control, body: @escaping @Sendable (Context) -> Void) {
            self.name = name
            self.control = control
            self.body = body
        }

        func run() {
            Thread.current.name = name
            defer { control.closeOwned() }
            body(Context(control: control))
        }
    }
}
