// Placeholder until scripts/gen-dashboard generates this file from web/ (the dashboard page).
public enum DashboardAssets {
    public static let files: [String: (contentType: String, body: String)] = [
        "/": ("text/html; charset=utf-8", """
            <!doctype html><title>opqueue</title><h1>opqueue coordinator</h1>
            <p><a href="/api/summary">/api/summary</a> · <a href="/metrics">/metrics</a></p>
            """),
    ]
}
