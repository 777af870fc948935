extension SyncRule {
    /// The larger of two values by `precedes`; a value beats none. The one maximum of every rule
    /// that takes one (`maximum`, `latest`, `forward`, `latestWins`, `stickyTrue`).
    /// - Parameters:
    ///   - a: a value, or none.
    ///   - b: another value, or none.
    ///   - precedes: a strict total order.
    @inlinable public static func larger<Value>(_ a: Value?, _ b: Value?, by precedes: (Value, Value) -> Bool) -> Value? {
        guard let a else { return b }
        guard let b else { return a }
        return precedes(a, b) ? b : a
    }

    /// The smaller of two values by `precedes`; a value beats none (`minimum`, `earliest`).
    /// - Parameters:
    ///   - a: a value, or none.
    ///   - b: another value, or none.
    ///   - precedes: a strict total order.
    @inlinable public static func smaller<Value>(_ a: Value?, _ b: Value?, by precedes: (Value, Value) -> Bool) -> Value? {
        guard let a else { return b }
        guard let b else { return a }
        return precedes(b, a) ? b : a
    }

    /// `larger(_:_:by:)` by `<`.
    @inlinable public static func larger<Value: Comparable>(_ a: Value, _ b: Value) -> Value { larger(a, b, by: <)! }

    /// `smaller(_:_:by:)` by `<`, a value beating none.
    @inlinable public static func smaller<Value: Comparable>(_ a: Value?, _ b: Value?) -> Value? { smaller(a, b, by: <) }
}
