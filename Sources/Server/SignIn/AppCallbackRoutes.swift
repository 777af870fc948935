package import FastCGI
package import Identity
import WebForms

/// `POST /auth/app-callback/{app}`: Apple's form post for an app that opened Apple's web
/// authorization in a browser tab (Android, Flutter), sent on to that app.
package enum AppCallbackRoutes {
    /// The route: a browser lands on it, so its errors are pages.
    package static let routes = [Route("POST", "/auth/app-callback/{app}", answers: .page, relay)]

    /// 303 to the app's configured target with Apple's fields; a page for an unknown app (404), a
    /// body that is not Apple's form post (415, 400). No value of a refused form is repeated.
    package static func relay(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        try request.requireForm("Apple's answer is a form post (application/x-www-form-urlencoded)")
        guard let form = FormEncoding.fields(String(decoding: request.body, as: UTF8.self)) else {
            return WebSignInRoutes.page(400, "The sign-in answer could not be read. Please start again in the app.")
        }
        switch try useCases.signIn.relayAppCallback(app: context.parameters["app"] ?? "", form: form) {
        case .unknownApp:
            return WebSignInRoutes.page(404, "This sign-in is for an app this server does not know.")
        case .refused(let reason):
            return WebSignInRoutes.page(400, reason + " Please start again in the app.")
        case .redirect(let location):
            // No body, so no Content-Type; nginx adds Referrer-Policy (no-referrer) to every answer.
            return Response(status: 303, headers: [("Location", location), ("Cache-Control", "no-store")])
        }
    }
}
