import CoreMetrics
import FastCGI
import Foundation
import JOSE
import MariaDB
import SIWAFixtures
import Server
import SiwaConfig
import StrictJSON
import Telemetry
import Testing

/// `GET /metrics` in process: what the handlers answered, counted by route, status and outcome,
/// with the outbox read from the database at the scrape.
@Suite(.serialized) struct MetricsTests {
    /// The scrape's value of `series` (written as in the exposition); nil when it is absent.
    func value(_ series: String, in scrape: String) -> Double? {
        scrape.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
    }

    @Test("A family makes each combination of label values once, also for many threads at once, and keeps every increment")
    func familyAcrossThreads() {
        let exporter = PrometheusExporter()
        let family = MetricFamily(counter: "siwa_test_family_total", labels: ["route", "status"], factory: exporter.factory)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for index in 0..<2_000 { family["r\(index % 10)", "200"].increment() }
        }
        for route in 0..<10 {
            #expect(family["r\(route)", "200"] === family.metric(["r\(route)", "200"]))
        }
        let scrape = String(decoding: exporter.render(), as: UTF8.self)
        for route in 0..<10 {
            #expect(value(#"siwa_test_family_total{route="r\#(route)",status="200"}"#, in: scrape) == 1_600)
        }
    }

    @Test("Sign-ins, refusals, refreshes (rotation, retry, reuse) and a deletion's queued revocation appear in the scrape as counted")
    func countsWhatHappened() throws {
        let harness = try HandlerHarness(metrics: PrometheusExporter())
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        harness.issued.issue("code-1", subject: real.sub, audience: real.aud)
        let signedIn = harness.signIn(real.token, code: "code-1", at: real.suggested_fixed_clock)
        #expect(signedIn.status == 200, "\(signedIn.text)")
        #expect(harness.signIn("not.a.token", at: real.suggested_fixed_clock).status == 401)
        let body = try signedIn.json()
        let refresh = try #require(try body.string("refreshToken"))
        let rotated = harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#)
        #expect(rotated.status == 200)
        let second = try #require(try rotated.json().string("refreshToken"))
        let retried = harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#)
        #expect(retried.status == 200)
        let access = try #require(try retried.json().string("accessToken"))
        #expect(harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(second)"}"#).status == 401)
        let again = harness.signIn(real.token, at: real.suggested_fixed_clock)
        let againAccess = try #require(try again.json().string("accessToken"))
        #expect(harness.send("DELETE", "/auth/account", headers: harness.bearer(againAccess)).status == 204)
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(access)).status == 401, "the deleted account's session")

        // The daily check of Apple's tokens 100 s behind.
        _ = try harness.connection.execute("UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) - INTERVAL 100 SECOND")
        let tokens = try harness.count("SELECT COUNT(*) FROM apple_tokens")
        let response = harness.send("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.contentType == "text/plain; version=0.0.4; charset=utf-8")
        let scrape = response.text
        let expected: [(String, Double)] = [
            (#"siwa_sign_ins_total{flow="native",result="success"}"#, 2),
            (#"siwa_sign_ins_total{flow="native",result="malformed_token"}"#, 1),
            (#"siwa_http_requests_total{route="/auth/apple",status="200"}"#, 2),
            (#"siwa_http_requests_total{route="/auth/apple",status="401"}"#, 1),
            (#"siwa_refreshes_total{result="rotated"}"#, 1),
            (#"siwa_refreshes_total{result="reuse_interval"}"#, 1),
            (#"siwa_refreshes_total{result="reuse_detected"}"#, 1),
            (#"siwa_http_requests_total{route="/auth/account",status="204"}"#, 1),
            (#"siwa_http_request_duration_seconds_count{route="/auth/refresh"}"#, 3),
            (#"siwa_outbox_depth{outbox="revocations"}"#, 1),
            (#"siwa_outbox_depth{outbox="webhooks"}"#, 0),
            (#"siwa_outbox_due{outbox="revocations"}"#, 1),
            (#"siwa_outbox_due{outbox="webhooks"}"#, 0),
            ("siwa_workers", Double(harness.application.config.workerThreads)),
            ("siwa_apple_validations_due", Double(tokens)),
        ]
        for (series, count) in expected {
            #expect(value(series, in: scrape) == count, "\(series)")
        }
        #expect(tokens == 0 || (100...160).contains(value("siwa_apple_validation_overdue_seconds", in: scrape) ?? 0), "\(tokens)")
        // The scrape itself is being answered.
        #expect(value("siwa_workers_busy", in: scrape) == 1)
        #expect((value("process_resident_memory_bytes", in: scrape) ?? 0) > 1_000_000)
        #expect((value("process_open_fds", in: scrape) ?? 0) > 2)
        #expect(!scrape.contains(refresh) && !scrape.contains(real.token))
        #expect(value("siwa_database_up", in: scrape) == 1)
        #expect((value("siwa_database_read_seconds", in: scrape) ?? -1) >= 0)
    }

    @Test("A scrape whose database reads fail still answers, with siwa_database_up 0; 1 again once they succeed")
    func databaseUnavailable() throws {
        let harness = try HandlerHarness(metrics: PrometheusExporter())
        // The outbox's table gone: its read fails as a database that does not answer would.
        _ = try harness.connection.execute("RENAME TABLE apple_revocations TO apple_revocations_away")
        let failed = harness.send("GET", "/metrics")
        _ = try harness.connection.execute("RENAME TABLE apple_revocations_away TO apple_revocations")
        #expect(failed.status == 200)
        #expect(value("siwa_database_up", in: failed.text) == 0)
        #expect(value("siwa_database_up", in: harness.send("GET", "/metrics").text) == 1)
    }

    @Test("Without metrics, GET /metrics is not a route")
    func offByChoice() throws {
        let harness = try HandlerHarness()
        #expect(harness.send("GET", "/metrics").status == 404)
    }
}
