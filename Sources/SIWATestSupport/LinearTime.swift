import Glibc

/// How a reader's cost grows with its input, for the checks that every reader of client input
/// stays linear: a reader that compares each item with every earlier one costs 256 times more on
/// 16 times the input, a linear one about 16 times.
///
/// It measures the CPU time of the calling thread, the least of a few runs: time the machine
/// spends elsewhere (another test, a build) does not count, so the ratio of two sizes is stable
/// where a wall-clock figure would not be.
package enum LinearTime {
    /// The costs of reading `small` and `large` and their ratio.
    package struct Growth: CustomStringConvertible {
        package let small: Double
        package let large: Double
        package var ratio: Double { large / max(small, 1e-7) }

        package var description: String {
            "\(Self.milliseconds(small)) ms -> \(Self.milliseconds(large)) ms (x\((ratio * 10).rounded() / 10))"
        }

        private static func milliseconds(_ seconds: Double) -> Double { (seconds * 10_000).rounded() / 10 }
    }

    /// The least CPU time of this thread over `runs` calls of `work`, in seconds.
    package static func cpuSeconds(runs: Int = 3, _ work: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<runs {
            let start = threadCPUTime()
            work()
            best = min(best, threadCPUTime() - start)
        }
        return best
    }

    /// The cost of `read` on `small` and on `large`.
    package static func growth<Input>(_ small: Input, _ large: Input, runs: Int = 3, _ read: (Input) -> Void) -> Growth {
        read(small)  // Warms caches and lazily made tables up.
        return Growth(small: cpuSeconds(runs: runs) { read(small) }, large: cpuSeconds(runs: runs) { read(large) })
    }

    private static func threadCPUTime() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// Inputs of one adversarial shape at a given size, for `LinearTime`.
package enum AdversarialJSON {
    /// One JSON object of about `bytes` bytes, for each shape a reader of client input must read in
    /// linear time: many members, names alike but for their last bytes, escaped names, deep and
    /// wide nesting, long strings of escapes, long numbers, many small arrays and objects.
    package static func shapes(bytes: Int) -> [(name: String, text: [UInt8])] {
        let prefix = String(repeating: "x", count: 40)
        return [
            ("distinct members", object(bytes) { "\"m\($0)\":0" }),
            ("members alike but for the end", object(bytes) { "\"\(prefix)\($0)\":0" }),
            ("escaped member names", object(bytes) { "\"\\u006d\\u0065\($0)\":0" }),
            ("an unterminated deep array", Array(("{\"a\":" + String(repeating: "[", count: bytes)).utf8)),
            ("many nests as deep as allowed", member("a", list(bytes) { _ in "[[[[[[[[[[[[[[0]]]]]]]]]]]]]]" })),
            ("a string of escapes", member("s", "\"" + String(repeating: "\\u00e9\\n", count: bytes / 8) + "\"")),
            ("a string of surrogate pairs", member("s", "\"" + String(repeating: "\\ud83d\\ude00", count: bytes / 12) + "\"")),
            ("a long number", member("n", "1" + String(repeating: "7", count: bytes))),
            ("a long fraction", member("n", "0." + String(repeating: "5", count: bytes) + "e-3")),
            ("many small arrays", member("a", list(bytes) { _ in "[0]" })),
            ("many small objects", member("a", list(bytes) { "{\"k\":\($0),\"v\":[]}" })),
        ]
    }

    /// `{"a0":…,…}` of about `bytes` bytes, member `i` being `member(i)`.
    private static func object(_ bytes: Int, _ member: (Int) -> String) -> [UInt8] {
        Array(("{" + items(bytes, member) + "}").utf8)
    }

    private static func list(_ bytes: Int, _ element: (Int) -> String) -> String { "[" + items(bytes, element) + "]" }

    private static func member(_ name: String, _ value: String) -> [UInt8] { Array("{\"\(name)\":\(value)}".utf8) }

    private static func items(_ bytes: Int, _ item: (Int) -> String) -> String {
        var parts: [String] = []
        var total = 0
        while total < bytes {
            let part = item(parts.count)
            total += part.utf8.count + 1
            parts.append(part)
        }
        return parts.joined(separator: ",")
    }
}
