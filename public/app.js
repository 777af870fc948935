// The account page: signs in through /auth/web/start, then shows the user, their emails and devices.
// Every call carries the HttpOnly session cookie; writes are same-origin, so the browser sends Origin.
"use strict";

const $ = (id) => document.getElementById(id);

const signInErrors = {
  user_cancelled_authorize: "Sign-in was cancelled.",
  invalid_token: "Apple's answer could not be verified. Please try again.",
  invalid_request: "Apple's answer was incomplete. Please try again.",
  user_disabled: "This account is disabled. Please contact support.",
};

// The app's name and whether it syncs progress (GET /auth/web/settings: SIWA_APP_NAME,
// SIWA_PAGE_PROGRESS); without an answer, a plain account page.
const settings = fetch("/auth/web/settings", { headers: { Accept: "application/json" } })
  .then((response) => (response.ok ? response.json() : {}))
  .catch(() => ({}))
  .then((value) => ({ appName: value.appName || null, showsProgress: value.showsProgress === true }));

const statusMessages = {
  429: "Too many attempts. Wait a few seconds, then try again.",
  503: "The service is not available at the moment. Try again in a few seconds.",
};

// What went wrong, for the notice: siwa's errors are JSON; nginx's own (siwa down, too many
// requests) are pages.
async function failure(response) {
  const body = await response.json().catch(() => ({}));
  return new Error(body.message || statusMessages[response.status] || `Something went wrong (${response.status}). Please try again.`);
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, credentials: "same-origin", headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) return null;
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? {} : response.json();
}

function notice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

function item(text, tags = [], detail = "") {
  const li = document.createElement("li");
  li.textContent = text;
  if (detail) {
    const small = document.createElement("span");
    small.className = "detail";
    small.textContent = detail;
    li.append(small);
  }
  for (const tag of tags) {
    const span = document.createElement("span");
    span.className = "tag";
    span.textContent = tag;
    li.append(span);
  }
  return li;
}

async function render() {
  const [me, { appName, showsProgress }] = await Promise.all([api("GET", "/auth/me"), settings]);
  $("app-name").textContent = appName || "Account";
  $("signed-out").hidden = me !== null;
  $("signed-in").hidden = me === null;
  if (me === null) {
    $("signed-out-text").textContent = `Sign in to see your account${showsProgress ? ", your devices and your progress" : " and your devices"}.`;
    document.title = appName ? `Sign in to ${appName}` : "Sign in";
    return;
  }
  const user = me.user;
  const name = [user.firstName, user.lastName].filter(Boolean).join(" ");
  $("user-name").textContent = name || "Your account";
  document.title = `${name || "Your account"}: ${appName || "account"}`;
  $("emails").replaceChildren(...user.emails.map((email) => item(email.address, [
    email.isPrivateRelay ? "Hide My Email" : null,
    email.isPrivateRelay ? (email.forwardingEnabled ? "forwarding" : "forwarding off") : null,
    email.verified ? "verified" : "not verified",
  ].filter(Boolean))));
  // Progress only for an app that syncs it (SIWA_PAGE_PROGRESS), once it synced some.
  const synced = showsProgress ? await api("POST", "/sync", { cursor: null }) : null;
  const hasProgress = synced !== null && (synced.progress.length > 0 || synced.achievements.length > 0
    || (synced.profile !== null && (synced.profile.totalXp > 0 || synced.profile.currentLevel > 0 || synced.profile.streakDays > 0)));
  $("progress").hidden = !hasProgress;
  if (hasProgress) {
    const profile = synced.profile || {};
    const completed = synced.progress.filter((lesson) => lesson.status === "completed").length;
    const achieved = synced.achievements.filter((achievement) => achievement.completed).length;
    $("progress").textContent = `Level ${profile.currentLevel || 0} · ${profile.totalXp || 0} XP · ${profile.streakDays || 0}-day streak · `
      + `${completed} of ${synced.progress.length} lessons completed · ${achieved} achievements`;
  }
  const { sessions } = await api("GET", "/auth/sessions");
  $("sessions").replaceChildren(...sessions.map((session) => {
    const last = new Date(session.lastUsedAt * 1000).toLocaleString();
    const device = session.device || (session.kind === "web" ? "Web browser" : "Device");
    const kind = session.kind === "web" ? "signed in on the web" : "signed in with the app";
    const li = item(device, session.current ? ["this browser"] : [], `${kind}, last used ${last}`);
    li.dataset.sessionId = session.id;
    if (!session.current) {
      const button = document.createElement("button");
      button.textContent = "Revoke";
      button.className = "revoke";
      button.addEventListener("click", () => act(() => api("DELETE", `/auth/sessions/${session.id}`)));
      li.append(button);
    }
    return li;
  }));
}

async function act(action, message = "") {
  try {
    await action();
    notice(message);
  } catch (error) {
    notice(error.message);
  }
  await render();
}

document.addEventListener("DOMContentLoaded", () => {
  const params = new URLSearchParams(location.search);
  const error = params.get("sign_in_error");
  if (error) {
    notice(signInErrors[error] || `Sign-in failed (${error}).`);
    history.replaceState(null, "", location.pathname);
  }
  $("sign-out").addEventListener("click", () => act(() => api("POST", "/auth/logout"), "Signed out."));
  // The export as a file; a refusal (five exports in the last hour) as a message, not a file.
  $("download-data").addEventListener("click", (event) => {
    event.preventDefault();
    fetch("/auth/account/export", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(async (response) => {
        if (!response.ok) throw await failure(response);
        const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "")?.[1] || "account.json";
        const link = document.createElement("a");
        link.href = URL.createObjectURL(await response.blob());
        link.download = name;
        link.click();
        URL.revokeObjectURL(link.href);
        notice("");
      })
      .catch((error) => notice(error.message));
  });
  $("delete-account").addEventListener("click", () => {
    $("delete-confirmation").hidden = false;
    $("delete-account").hidden = true;
  });
  const closeConfirmation = () => {
    $("delete-confirmation").hidden = true;
    $("delete-account").hidden = false;
  };
  $("cancel-delete").addEventListener("click", closeConfirmation);
  $("confirm-delete").addEventListener("click", () => act(async () => {
    await api("DELETE", "/auth/account");
    closeConfirmation();
  }, "Your account and all its data were deleted."));
  render().catch((error) => notice(error.message));
});
