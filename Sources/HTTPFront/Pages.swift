/// The dashboard's files (the page itself lives in Sources/DashboardPage; until it is linked, a
/// placeholder that says where the JSON is).
enum Pages {
    static func file(_ path: String) -> (contentType: String, body: String)? {
        guard path == "/" || path == "/index.html" else { return nil }
        return ("text/html; charset=utf-8", """
            <!doctype html><title>opqueue</title><h1>opqueue coordinator</h1>
            <p><a href="/api/summary">/api/summary</a> · <a href="/metrics">/metrics</a></p>
            """)
    }
}
