package import AccountData
package import FastCGI
package import Identity
import JOSE
import StrictJSON
import SyncRules

/// `POST /sync` (Bearer access token, or the web session cookie):
/// `{cursor, limit, profile, progress[], achievements[], collections{}}` →
/// `{cursor, profile, progress[], achievements[], collections{}, more, resync}` with everything that
/// changed for the user since the client's cursor, a page at a time. Every item is validated before
/// anything is written (400 naming the field path); the merge is one transaction.
package enum SyncRoutes {
    /// Items per list and request.
    static let maximumItems = SyncLimits.maximumItems

    /// The route: a body up to `SIWA_MAX_BODY_BYTES`, for a session.
    package static let routes = [Route("POST", "/sync", bodyLimits: .sync, access: .session, handle)]

    package static func handle(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        // The session is checked by the sync's own statements (one round trip less per sync).
        let (principal, uncheckedSession) = try Caller.authenticateDeferringSessionCheck(request, useCases)
        let collections = useCases.context.core.collections
        let changes = try changes(in: request, collections: collections)
        let delta = try useCases.sync.sync(principal, uncheckedSession: uncheckedSession, changes: changes)
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: SyncDeltaJSON.json(delta, collections: collections))
    }

    // MARK: - Validation

    /// The request body, read and validated. The body is read once by the strict JSON pull
    /// reader into the members a sync uses; the rules are applied once all of it was read, so a
    /// malformed body is refused as such whatever its members hold.
    package static func changes(in request: Request, collections: DeclaredCollections = .none) throws -> SyncChanges {
        try request.requireJSON()
        let body: SyncWire.Body
        do {
            body = try collections.wire.read(request.body, limits: BodyLimits.sync.json)
        } catch JSONError.tooLarge(_, let reason) {
            throw HTTPError.badRequest("The body is larger than a sync accepts: \(reason)")
        } catch {
            throw HTTPError.badRequest("The body is not a JSON object")
        }
        do throws(SyncWire.Problem) {
            var cursor: (cursor: SyncCursor, tag: String?)?
            if let text = try body.cursor() {
                guard let value = SyncCursor.presented(text) else { throw SyncWire.Problem("cursor", "is not a cursor this server gave") }
                cursor = value
            }
            var limit: Int?
            if let value = try body.limit() {
                guard (1...Int64(SyncCursor.defaultPage)).contains(value) else {
                    throw SyncWire.Problem("limit", "must be an integer from 1 to \(SyncCursor.defaultPage)")
                }
                limit = Int(value)
            }
            return SyncChanges(
                cursor: cursor?.cursor, records: try body.records(maximumItems: maximumItems), limit: limit, cursorTag: cursor?.tag)
        } catch {
            throw HTTPError.badRequest(error.message)
        }
    }

    static func invalid(_ path: String, _ problem: String) -> HTTPError { HTTPError.badRequest("`\(path)` \(problem)") }
}
