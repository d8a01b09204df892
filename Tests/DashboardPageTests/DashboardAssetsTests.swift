import DashboardPage
import Foundation
import Testing

/// DashboardAssets.swift is generated from Sources/DashboardPage/web/ by scripts/gen-dashboard; these
/// fail when someone edited web/ and forgot to run it, and when the page would load anything from
/// outside opcoord (it must work without network access: no CDN).
struct DashboardAssetsTests {
    private static let web = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/DashboardPage/web")

    private static func webFiles() throws -> [String: String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: web.path).filter { !$0.hasPrefix(".") }
        var files: [String: String] = [:]
        for name in names {
            let path = name == "index.html" ? "/" : "/assets/\(name)"
            files[path] = try String(contentsOf: web.appendingPathComponent(name), encoding: .utf8)
        }
        return files
    }

    @Test func generatedAssetsMatchTheWebDirectory() throws {
        let files = try Self.webFiles()
        #expect(Set(DashboardAssets.files.keys) == Set(files.keys),
                "DashboardAssets.swift is out of date: run scripts/gen-dashboard")
        for (path, text) in files {
            let body = DashboardAssets.files[path]?.body
            #expect(body == text, "\(path) differs from web/: run scripts/gen-dashboard")
        }
    }

    @Test func pageIsWholeAndContentTypesAreRight() throws {
        let files = DashboardAssets.files
        #expect(files["/"]?.contentType.hasPrefix("text/html") == true)
        #expect(files["/assets/app.js"]?.contentType.hasPrefix("text/javascript") == true)
        #expect(files["/assets/app.css"]?.contentType.hasPrefix("text/css") == true)
        let html = try #require(files["/"]?.body)
        #expect(html.contains(#"src="/assets/app.js""#))
        #expect(html.contains(#"href="/assets/app.css""#))
    }

    /// Only same-origin URLs: an http(s) URL in a src/href/url()/import would need network access
    /// (the SVG namespace URI is a name, not a fetch).
    @Test func nothingIsLoadedFromElsewhere() throws {
        for (path, asset) in DashboardAssets.files {
            let text = asset.body.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
            #expect(!text.contains("http://") && !text.contains("https://") && !text.contains("//cdn"),
                    "\(path) refers to another site")
        }
    }
}
