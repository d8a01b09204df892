import DashboardPage

/// The dashboard's files, compiled into the binary (Sources/DashboardPage; no CDN).
enum Pages {
    static func file(_ path: String) -> (contentType: String, body: String)? {
        DashboardAssets.files[path == "/index.html" ? "/" : path]
    }
}
