import Testing

@testable import Server

@Suite struct BrowserLabelTests {
    @Test(
        "A web session's device is named from its User-Agent, the most specific browser and system first",
        arguments: [
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
                "Safari on iPhone"
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
                "Chrome on Mac"
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
                "Edge on Windows"
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36",
                "Chrome on Android"
            ),
            ("Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0", "Firefox on Linux"),
            ("curl/8.5.0", "Web browser"),
        ])
    func labels(agent: String, label: String) {
        #expect(BrowserLabel.label(userAgent: agent) == label)
    }

    @Test("No User-Agent at all is a web browser")
    func none() {
        #expect(BrowserLabel.label(userAgent: nil) == "Web browser")
    }
}
