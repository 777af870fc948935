import FastCGI

/// The emulator's HTML: the consent page, the self-submitting form post back to the client, and
/// the error page. Every value is escaped.
enum ConsentPage {
    static func render(_ request: Emulator.AuthorizeRequest, users: [TestUser]) -> Response {
        let hidden = request.parameters.map { hiddenInput($0.0, $0.1) }.joined(separator: "\n")
        let choices = users.map { user in
            #"<label><input type="radio" name="user_id" value="\#(escape(user.id))"> \#(escape(user.firstName)) \#(escape(user.lastName)) &lt;\#(escape(user.email))&gt; <small>(test user \#(escape(user.id)), sub …\#(escape(String(user.sub.suffix(9)))))</small></label><br>"#
        }.joined(separator: "\n")
        let body = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Sign in with Apple (emulator)</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>body{font-family:-apple-system,Helvetica,Arial,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}
            fieldset{margin:1rem 0}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem}</style></head>
            <body>
            <h1>Sign in with Apple</h1>
            <p>This is the local Apple ID emulator. <strong>\(escape(request.clientID))</strong> asks to sign you in\(request.scopes.isEmpty ? "" : " and to see your " + escape(request.scopes.joined(separator: " and ")))</p>
            <form method="post" action="/auth/authorize" id="consent">
            \(hidden)
            <fieldset><legend>Apple Account</legend>
            \(choices)
            <label><input type="radio" name="user_id" value="new" id="new-user" checked> A new test user:</label><br>
            <input name="first_name" id="first-name" placeholder="First name" value="Test">
            <input name="last_name" id="last-name" placeholder="Last name" value="User">
            <input name="email" id="email" type="email" placeholder="Email (optional)">
            </fieldset>
            <fieldset><legend>Email</legend>
            <label><input type="radio" name="email_choice" value="share" id="share-email" checked> Share My Email</label><br>
            <label><input type="radio" name="email_choice" value="hide" id="hide-email"> Hide My Email</label>
            </fieldset>
            <button type="submit" name="action" value="continue" id="continue">Continue</button>
            <button type="submit" name="action" value="cancel" id="cancel">Cancel</button>
            </form>
            </body></html>
            """
        return html(200, body)
    }

    /// Apple's `form_post` answer: a page whose form posts `fields` to the client at once.
    static func formPost(to url: String, _ fields: [(String, String)]) -> Response {
        let inputs = fields.map { hiddenInput($0.0, $0.1) }.joined(separator: "\n")
        let body = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Signing in</title></head>
            <body onload="document.forms[0].submit()">
            <form method="post" action="\(escape(url))">
            \(inputs)
            <noscript><button type="submit">Continue</button></noscript>
            </form>
            </body></html>
            """
        return html(200, body)
    }

    static func errorPage(code: String, message: String) -> Response {
        html(
            400,
            """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Sign in with Apple: \(escape(code))</title></head>
            <body><h1>\(escape(code))</h1><p>\(escape(message))</p></body></html>
            """)
    }

    private static func html(_ status: Int, _ body: String) -> Response {
        Response(status: status, contentType: "text/html;charset=UTF-8", headers: [("Cache-Control", "no-store")], body: Array(body.utf8))
    }

    private static func hiddenInput(_ name: String, _ value: String) -> String {
        #"<input type="hidden" name="\#(escape(name))" value="\#(escape(value))">"#
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
