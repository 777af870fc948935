package import FastCGI
package import Identity
package import SiwaConfig

/// `GET /.well-known/apple-developer-domain-association.txt`: Apple's domain-association file as
/// the operator configured it (`SIWA_DOMAIN_ASSOCIATION_FILE`), or 404 when none is needed.
package struct DomainAssociationRoute: Sendable {
    /// The file; nil answers 404.
    let association: DomainAssociation?

    package init(_ association: DomainAssociation?) { self.association = association }

    /// The route of this file.
    package var route: Route { Route("GET", DomainAssociation.urlPath, handle) }

    package func handle(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        guard let association else { throw HTTPError.notFound }
        return Response(
            status: 200, contentType: "text/plain; charset=utf-8", headers: [("Cache-Control", "public, max-age=300")],
            body: association.contents)
    }
}
