import Foundation

/// Polls `condition` every 10 ms for at most `seconds`, and says whether it became true: how a
/// test waits for another thread or process to reach a state, where a sleep would only guess.
package func eventually(within seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while DispatchTime.now().uptimeNanoseconds < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return try condition()
}

/// `eventually(within:_:)` for a condition that awaits: polls it every 10 ms for at most `seconds`
/// without blocking a thread of the concurrency pool.
package func eventually(within seconds: Double, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while DispatchTime.now().uptimeNanoseconds < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return try await condition()
}

/// `eventually(within:_:)` for a condition on the main actor (a view model's state): polls it every
/// 10 ms for at most `seconds`, letting the main actor's other work run between.
@MainActor
package func eventuallyOnMain(within seconds: Double, _ condition: @MainActor () -> Bool) async -> Bool {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while DispatchTime.now().uptimeNanoseconds < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}
