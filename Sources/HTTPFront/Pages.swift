import DashboardPage

/// The dashboard's files: Sources/DashboardPage/web/, compiled in by scripts/gen-dashboard.
enum Pages {
    static func file(_ path: String) -> (contentType: String, body: String)? {
        DashboardAssets.files[path == "/index.html" ? "/" : path]
    }
}
