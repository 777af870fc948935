import FastCGI
import Foundation
import StrictJSON

/// A stand-in for Apple's Sign in with Apple JS (`appleid.auth.js`), served at the path Apple's CDN
/// serves it at, and the popup's answer (`response_mode=web_message`). A page loads it from the
/// emulator in development and from `https://appleid.cdn-apple.com` in production: one URL.
///
/// It has the API Apple documents: `AppleID.auth.init(ClientConfigI)` (or the
/// `appleid-signin-*` meta tags), `AppleID.auth.signIn()`, which with `usePopup: true` resolves
/// with a `SignInResponseI` (`{authorization: {code, id_token, state}, user}`, the `user` on the
/// first authorization only) or rejects with a `SignInErrorI` (`{error}`), and the
/// `AppleIDSignInOnSuccess` (`detail.data`) and `AppleIDSignInOnFailure` (`detail.error`) events.
/// Without `usePopup` the page itself goes to the authorization, which form-posts to
/// `redirectURI` (with a scope; without one, Apple's answer comes in the fragment). Between the script and its popup, the popup posts
/// `{"method":"oauthDone","data":...}` to its opener, for the redirect URI's origin only.
enum SignInWithAppleJS {
    /// Where Apple's CDN serves the script; the emulator serves it at the same path.
    static let path = "/appleauth/static/jsapi/appleid/1/en_US/appleid.auth.js"

    static func script() -> Response {
        Response(
            status: 200, contentType: "application/javascript; charset=utf-8", headers: [("Cache-Control", "max-age=300")],
            body: Array(source.utf8))
    }

    /// The popup's last page: Apple's answer to the opener, which then closes the popup.
    static func webMessage(to redirectURI: String, _ data: String) -> Response {
        // The redirect URI's origin: scheme, host and port.
        let afterScheme = redirectURI.range(of: "://").map { redirectURI[$0.upperBound...] } ?? ""
        let origin =
            String(redirectURI.prefix(redirectURI.count - afterScheme.count)) + String(afterScheme.prefix { $0 != "/" && $0 != "?" })
        // Inside a script element: no "<" may end it early.
        let message = JSONText.object([("method", .string("oauthDone")), ("data", .raw(data))]).replacingOccurrences(
            of: "<", with: "\\u003c")
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Signing in</title></head><body>
            <script>
            (function () {
              // The opener closes this window once it has the answer: closing it here could be seen
              // (popup.closed) before the message arrives, as a person closing it.
              if (window.opener) { window.opener.postMessage(JSON.stringify(\(message)), \(JSONText.quoted(origin).replacingOccurrences(of: "<", with: "\\u003c"))); }
              else { window.close(); }
            })();
            </script>
            </body></html>
            """
        return Response(
            status: 200, contentType: "text/html;charset=UTF-8", headers: [("Cache-Control", "no-store")], body: Array(html.utf8))
    }

    static let source = #"""
        /* A stand-in for Apple's Sign in with Apple JS, served by the Apple ID emulator (not Apple's code). */
        (function () {
          "use strict";
          var origin = new URL(document.currentScript.src).origin;
          var config = null;
          function meta(name) {
            var element = document.querySelector('meta[name="appleid-signin-' + name + '"]');
            return element ? element.getAttribute("content") : undefined;
          }
          function fromMeta() {
            return { clientId: meta("client-id"), scope: meta("scope"), redirectURI: meta("redirect-uri"),
                     state: meta("state"), nonce: meta("nonce"), usePopup: meta("use-popup") === "true" };
          }
          function dispatch(name, detail) { document.dispatchEvent(new CustomEvent(name, { detail: detail })); }
          function authorizeURL(c, mode) {
            var query = [["client_id", c.clientId], ["redirect_uri", c.redirectURI], ["response_type", "code id_token"],
                         ["response_mode", mode]];
            if (c.scope) { query.push(["scope", c.scope]); }
            if (c.state) { query.push(["state", c.state]); }
            if (c.nonce) { query.push(["nonce", c.nonce]); }
            return origin + "/auth/authorize?" + query.map(function (pair) {
              return encodeURIComponent(pair[0]) + "=" + encodeURIComponent(pair[1]);
            }).join("&");
          }
          function signIn(options) {
            var c = Object.assign({}, config || fromMeta(), options || {});
            if (!c.clientId || !c.redirectURI) { return Promise.reject({ error: "invalid_request" }); }
            if (!c.usePopup) {
              window.location.assign(authorizeURL(c, c.scope ? "form_post" : "fragment"));
              return new Promise(function () {});
            }
            return new Promise(function (resolve, reject) {
              var popup = window.open(authorizeURL(c, "web_message"), "AppleAuthentication" + Date.now(), "width=700,height=700");
              var done = false, timer = null;
              function finish(ok, value) {
                if (done) { return; }
                done = true;
                window.removeEventListener("message", onMessage);
                if (timer) { clearInterval(timer); }
                if (ok) { dispatch("AppleIDSignInOnSuccess", { data: value }); resolve(value); }
                else { dispatch("AppleIDSignInOnFailure", { error: value.error }); reject(value); }
              }
              function onMessage(event) {
                if (event.origin !== origin || event.source !== popup) { return; }
                var message;
                try { message = JSON.parse(event.data); } catch (e) { return; }
                if (!message || message.method !== "oauthDone") { return; }
                if (message.data.error) { finish(false, { error: message.data.error }); } else { finish(true, message.data); }
                popup.close();
              }
              if (!popup) { finish(false, { error: "popup_blocked_by_browser" }); return; }
              window.addEventListener("message", onMessage);
              timer = setInterval(function () { if (popup.closed) { finish(false, { error: "popup_closed_by_user" }); } }, 250);
            });
          }
          function renderButton() {
            var container = document.getElementById("appleid-signin");
            if (!container || container.firstChild) { return; }
            var button = document.createElement("button");
            button.type = "button";
            button.textContent = "\uF8FF Sign in with Apple";
            button.addEventListener("click", function () { signIn().catch(function () {}); });
            container.appendChild(button);
          }
          window.AppleID = { auth: { init: function (c) { config = Object.assign({}, c); renderButton(); },
                                     signIn: signIn, renderButton: renderButton } };
          if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", renderButton); } else { renderButton(); }
        })();
        """#
}
