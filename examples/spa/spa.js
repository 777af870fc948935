// A single-page app that signs in with Sign in with Apple JS in a popup and siwa's API. The page's
// own origin hosts it; its path (with the trailing slash) is the redirect URI registered for the
// Services ID at Apple and in SIWA_APPLE_REDIRECT_URIS. `?forge=state` or `?forge=nonce` make it
// misbehave on purpose, for the tests: it must then be refused. With `?session=cookie` it signs in
// to the account pages' cookie session (POST /auth/web/apple) instead of keeping tokens.
(function () {
  "use strict";
  var config = window.SPA_CONFIG;
  var redirectURI = location.origin + location.pathname;
  var forge = new URLSearchParams(location.search).get("forge");
  var cookieSession = new URLSearchParams(location.search).get("session") === "cookie";
  var status = document.getElementById("status");
  function say(text) { status.textContent = text; }
  function random() {
    var bytes = crypto.getRandomValues(new Uint8Array(32));
    return btoa(String.fromCharCode.apply(null, bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function sha256hex(text) {
    return crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)).then(function (digest) {
      return Array.from(new Uint8Array(digest)).map(function (b) { return b.toString(16).padStart(2, "0"); }).join("");
    });
  }
  var state = random();
  var nonce = random();
  var session = null;  // tokens in memory only

  function signIn() {
    say("Signing in…");
    return AppleID.auth.signIn().then(function (response) {
      var authorization = response.authorization;
      var expected = forge === "state" ? random() : state;
      if (authorization.state !== expected) { throw new Error("the answer is not for this sign-in (state)"); }
      var name = response.user && response.user.name;
      return fetch(cookieSession ? "/auth/web/apple" : "/auth/apple", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          identityToken: authorization.id_token, authorizationCode: authorization.code,
          nonce: forge === "nonce" ? random() : nonce, redirectUri: redirectURI, device: "Single-page app",
          fullName: name ? { givenName: name.firstName, familyName: name.lastName } : undefined
        })
      });
    }).then(function (answer) {
      return answer.json().then(function (body) {
        if (!answer.ok) { throw new Error("siwa refused the sign-in: " + body.error); }
        session = body;
        // The cookie comes with the same-origin request by itself; tokens go in the header.
        return fetch("/auth/me", cookieSession ? {} : { headers: { Authorization: "Bearer " + session.accessToken } });
      });
    }).then(function (answer) {
      return answer.json();
    }).then(function (me) {
      document.getElementById("user").textContent = "Signed in as " + (me.user.firstName || "you") + " (user " + me.user.id + ")";
      say("signed-in");
    }).catch(function (error) {
      say("refused: " + (error.error || error.message));
    });
  }

  var script = document.createElement("script");
  script.src = config.appleScript;
  script.onerror = function () { say("Apple's script could not be loaded"); };
  script.onload = function () {
    sha256hex(nonce).then(function (hashed) {
      // Apple gets the nonce's SHA-256; siwa gets the nonce with the token.
      AppleID.auth.init({ clientId: config.clientId, scope: "name email", redirectURI: redirectURI, state: state,
                          nonce: hashed, usePopup: true });
      var button = document.querySelector("#appleid-signin button");
      button.addEventListener("click", function (event) { event.stopImmediatePropagation(); signIn(); }, true);
      say("ready");
    });
  };
  document.head.appendChild(script);
})();
