/// What the account page (public/index.html) shows of the app: its name, and whether it has a
/// progress line. The page reads them from `GET /auth/web/settings`.
package struct PageSettings: Sendable {
    /// The app's name in the page's heading and title (`SIWA_APP_NAME`); nil for a plain "Account".
    package var appName: String?
    /// Whether the app syncs progress, so the page shows it once some is synced (`SIWA_PAGE_PROGRESS`).
    package var showsProgress: Bool

    package init(appName: String? = nil, showsProgress: Bool = false) {
        self.appName = appName
        self.showsProgress = showsProgress
    }

    /// The longest app name the page shows, in Unicode scalars (as JSON Schema counts).
    package static let maximumNameLength = 64
}
