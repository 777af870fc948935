/// A name a person recognises for a web session's device, from its `User-Agent`: "Safari on
/// iPhone", "Chrome on Windows"; "Web browser" when it tells nothing. Only a label for the device
/// list, never used to decide anything.
enum BrowserLabel {
    static func label(userAgent: String?) -> String {
        guard let agent = userAgent else { return "Web browser" }
        func has(_ text: String) -> Bool { agent.contains(text) }
        // Most specific first: Edge and Opera say Chrome, Chrome says Safari, iOS says Mac OS X, Android says Linux.
        let browser: String? =
            has("Edg/")
            ? "Edge"
            : has("OPR/")
                ? "Opera"
                : has("Firefox/") || has("FxiOS/")
                    ? "Firefox"
                    : has("Chrome/") || has("CriOS/") ? "Chrome" : has("Safari/") ? "Safari" : nil
        let system: String? =
            has("iPhone")
            ? "iPhone"
            : has("iPad")
                ? "iPad"
                : has("Android")
                    ? "Android"
                    : has("Windows")
                        ? "Windows"
                        : has("CrOS") ? "ChromeOS" : has("Mac OS X") ? "Mac" : has("Linux") ? "Linux" : nil
        switch (browser, system) {
        case (let browser?, let system?): return "\(browser) on \(system)"
        case (let browser?, nil): return browser
        case (nil, let system?): return "Browser on \(system)"
        case (nil, nil): return "Web browser"
        }
    }
}
