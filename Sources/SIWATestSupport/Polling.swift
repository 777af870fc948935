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
