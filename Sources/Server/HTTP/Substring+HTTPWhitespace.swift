extension Substring {
    /// The text without the spaces and horizontal tabs at either end: HTTP's optional whitespace
    /// around header values and their parts (RFC 9110 §5.6.3). Foundation's
    /// `trimmingCharacters(in:)` goes through `NSString` on Linux: with every JSON request's
    /// `Content-Type` trimmed by it, it was about 3% of siwa's samples in a `perf` profile of the
    /// sign-in benchmark.
    var trimmingHTTPWhitespace: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
