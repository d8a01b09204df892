import FlyingFox
import Foundation

/// `/api/live`: the summary once a second over a WebSocket, so the page updates without polling.
/// Each connection asks for its own summary (three small requests a second to the loop per page).
struct LiveFeed: WSMessageHandler {
    let routes: Routes

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let routes = self.routes
        return AsyncStream { continuation in
            let pusher = Task {
                while !Task.isCancelled {
                    let text = (try? await routes.summary()) ?? #"{"error":"the coordinator did not answer"}"#
                    continuation.yield(.text(text))
                    try? await Task.sleep(for: .seconds(1))
                }
                continuation.finish()
            }
            // The page closing its socket ends the stream, and the pusher with it.
            let watcher = Task {
                for await _ in client {}
                pusher.cancel()
                continuation.finish()
            }
            continuation.onTermination = { _ in pusher.cancel(); watcher.cancel() }
        }
    }
}
