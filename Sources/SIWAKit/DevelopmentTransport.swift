public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif
#if canImport(Security)
    import Security
#else
    import Dispatch
    import HTTPClient
#endif

/// Requests that trust one more certificate authority besides the system's: the local stack's
/// self-signed certificate (`.run/tls/cert.pem` of `scripts/run`), for development.
///
/// Never the default, and never for a release build: put it behind `#if DEBUG`.
///
/// ```swift
/// let transport: any HTTPTransport
/// #if DEBUG
///     // The local stack's certificate, copied into the debug build's bundle.
///     let certificate = Bundle.main.url(forResource: "cert", withExtension: "pem")!
///     transport = try DevelopmentTransport(trustingCertificateAt: certificate)
/// #else
///     transport = URLSessionTransport()
/// #endif
/// ```
///
/// Every other check stays: the certificate chain must lead to that certificate or to a root the
/// system trusts, and the certificate must name the host. On Apple's platforms it is a `URLSession`
/// whose delegate adds the certificate as an anchor of the server's trust. On Linux, where
/// swift-corelibs-foundation's `URLSession` always uses the system's CA bundle, requests go
/// through libcurl (with the system's CA directory and this certificate), one connection per
/// request.
public struct DevelopmentTransport: HTTPTransport {
    #if canImport(Security)
        private let owner: SessionOwner
    #else
        private let certificateFile: String
    #endif

    /// - Parameter file: a PEM file with the certificate to trust (the first one in the file).
    /// - Throws: the file's read error, or `CocoaError(.fileReadCorruptFile)` when it holds no PEM
    ///   certificate.
    public init(trustingCertificateAt file: URL) throws {
        let pem = try Data(contentsOf: file)
        guard let der = Self.firstCertificate(inPEM: pem) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: file.path])
        }
        #if canImport(Security)
            guard let certificate = SecCertificateCreateWithData(nil, der as CFData) else {
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: file.path])
            }
            let delegate = AnchorDelegate(anchor: certificate)
            owner = SessionOwner(session: URLSession(configuration: .default, delegate: delegate, delegateQueue: nil))
        #else
            _ = der
            certificateFile = file.path
        #endif
    }

    /// Sends `request`, trusting the certificate as well as the system's roots.
    /// - Throws: `URLError` when no answer arrived (`.serverCertificateUntrusted`, or the system's TLS error on Apple's platforms, for a server
    ///   whose certificate is neither this one nor one the system trusts).
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        #if canImport(Security)
            return try await URLSessionTransport(session: owner.session).send(request)
        #else
            return try await CurlExchange.send(request, caFile: certificateFile)
        #endif
    }

    /// The DER bytes of the first `CERTIFICATE` block of a PEM file.
    static func firstCertificate(inPEM pem: Data) -> Data? {
        let text = String(decoding: pem, as: UTF8.self)
        guard let begin = text.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<text.endIndex)
        else { return nil }
        let base64 = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(base64))
    }
}

#if canImport(Security)
    /// The transport's session, invalidated with the last copy of the transport: a session keeps
    /// its delegate until it is invalidated.
    private final class SessionOwner: Sendable {
        let session: URLSession

        init(session: URLSession) {
            self.session = session
        }

        deinit {
            session.finishTasksAndInvalidate()
        }
    }

    /// Evaluates the server's trust with one more anchor, the system's roots still trusted.
    private final class AnchorDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {
        // Immutable after init; SecCertificate is an immutable CF object.
        private let anchor: SecCertificate

        init(anchor: SecCertificate) {
            self.anchor = anchor
        }

        func urlSession(
            _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
                let trust = challenge.protectionSpace.serverTrust
            else {
                completionHandler(.performDefaultHandling, nil)
                return
            }
            SecTrustSetAnchorCertificates(trust, [anchor] as CFArray)
            SecTrustSetAnchorCertificatesOnly(trust, false)
            if SecTrustEvaluateWithError(trust, nil) {
                completionHandler(.useCredential, URLCredential(trust: trust))
            } else {
                // The system's own evaluation then fails the request with its usual TLS error.
                completionHandler(.performDefaultHandling, nil)
            }
        }
    }
#else
    /// One exchange through libcurl, on a thread of its own queue (libcurl's call blocks).
    enum CurlExchange {
        private static let queue = DispatchQueue(label: "SIWAKit.DevelopmentTransport", attributes: .concurrent)
        /// Where Debian, Ubuntu and Alpine keep the system's CA certificates, hashed for OpenSSL.
        private static let systemCADirectory = "/etc/ssl/certs"

        static func send(_ request: URLRequest, caFile: String) async throws -> (Data, HTTPURLResponse) {
            guard let url = request.url, let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
                throw URLError(.unsupportedURL)
            }
            var headers = (request.allHTTPHeaderFields ?? [:]).map { ($0.key, $0.value) }
            if let body = request.httpBody, !body.isEmpty,
                !headers.contains(where: { $0.0.lowercased() == "content-type" })
            {
                headers.append(("Content-Type", "application/x-www-form-urlencoded"))
            }
            let exchange = HTTPRequest(
                method: request.httpMethod?.uppercased() ?? "GET", url: url.absoluteString, headers: headers,
                body: Array(request.httpBody ?? Data()))
            var configuration = HTTPClientConfiguration(
                connectTimeout: min(request.timeoutInterval, 10), timeout: request.timeoutInterval, caFile: caFile,
                caDirectory: systemCADirectory)
            configuration.maximumResponseBytes = 64 << 20
            let settings = configuration
            let response: HTTPResponse = try await withCheckedThrowingContinuation { continuation in
                queue.async {
                    do {
                        continuation.resume(returning: try HTTPClient(configuration: settings).send(exchange))
                    } catch let error as HTTPClientError {
                        continuation.resume(throwing: URLError(error.urlErrorCode, userInfo: [NSLocalizedDescriptionKey: error.reason]))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
            var fields: [String: String] = [:]
            for (name, value) in response.headers {
                fields[name] = fields[name].map { "\($0), \(value)" } ?? value
            }
            guard let http = HTTPURLResponse(url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: fields) else {
                throw URLError(.badServerResponse)
            }
            return (Data(response.body), http)
        }
    }

    extension HTTPClientError {
        /// The `URLError` code URLSession reports for the same failure, which SIWAKit's retries read.
        fileprivate var urlErrorCode: URLError.Code {
            switch code {
            case .invalidURL: return .badURL
            case .connectFailed: return .cannotConnectToHost
            case .timedOut: return .timedOut
            case .tlsFailed: return .serverCertificateUntrusted
            case .responseTooLarge: return .dataLengthExceedsMaximum
            case .transferFailed:
                switch curlCode {
                case 52: return .badServerResponse  // CURLE_GOT_NOTHING: closed with no byte of an answer
                case 55, 56: return .networkConnectionLost  // CURLE_SEND_ERROR, CURLE_RECV_ERROR
                default: return .unknown
                }
            }
        }
    }
#endif
