package import FastCGI
package import Identity
import WebForms

/// `POST /auth/app-callback/{app}`: Apple's form post for an app that opened Apple's web
/// authorization in a browser tab (Android, Flutter), sent on to that app.
package enum AppCallbackRoutes {
    /// 303 to the app's configured target with Apple's fields; a page for an unknown app.
    package static func relay(_ request: Request, _ parameters: [String: String], _ useCases: UseCases) throws -> Response {
        guard let form = FormEncoding.fields(String(decoding: request.body, as: UTF8.self)) else {
            return WebSignInRoutes.page(400, "The sign-in answer could not be read. Please start again in the app.")
        }
        guard let location = try useCases.signIn.appCallbackLocation(app: parameters["app"] ?? "", form: form) else {
            return WebSignInRoutes.page(404, "This sign-in is for an app this server does not know.")
        }
        return Response(
            status: 303, headers: [("Location", location), ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer")])
    }
}
