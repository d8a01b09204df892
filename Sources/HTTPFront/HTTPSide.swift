import Coordinator
import Dispatch
import FlyingFox
import FlyingSocks
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// Where and how the HTTP side listens (docs/HTTP.md).
public struct HTTPSideConfig: Sendable {
    public var host: String
    public var port: UInt16
    /// Required off loopback: every request must carry `Authorization: Bearer TOKEN`.
    public var token: String?
    /// Names besides the bind address a request's `Host` may give (`--http-allow-host`).
    public var allowedHosts: [String]
    public init(host: String, port: UInt16, token: String? = nil, allowedHosts: [String] = []) {
        self.host = host; self.port = port; self.token = token; self.allowedHosts = allowedHosts
    }

    /// "HOST:PORT" (or "[v6]:PORT"); nil when it is not one.
    public static func parse(_ text: String) -> (host: String, port: UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}

/// The coordinator's HTTP side: dashboard page, JSON (read through `CoordinatorReader`), /metrics (from
/// the loop's `MetricsBoard`) and a live WebSocket. Read-only; runs on Swift concurrency's threads,
/// never on the loop's.
public final class HTTPSide: Sendable {
    private let server: HTTPServer
    private let reader: CoordinatorReader
    private let metrics: MetricsExport
    private let routes: Routes
    private let logger: Logger
    private let tasks = Mutex<[Task<Void, Never>]>([])

    /// `endpoint`: the loop's in-process endpoint (CoordinatorConfig.internalEndpoint) in `context`.
    public init(config: HTTPSideConfig, board: MetricsBoard, endpoint: String, context: Context, logger: Logger) throws {
        self.logger = logger
        reader = try CoordinatorReader(endpoint: endpoint, context: context)
        metrics = MetricsExport(board: board)
        routes = Routes(reader: reader, metrics: metrics,
                        access: HTTPAccess(bindHost: config.host, allowedHosts: config.allowedHosts, token: config.token))
        let address: any SocketAddress = config.host.contains(":")
            ? try sockaddr_in6.inet6(ip6: config.host, port: config.port)
            : try sockaddr_in.inet(ip4: config.host == "localhost" ? "127.0.0.1" : config.host, port: config.port)
        server = HTTPServer(address: address, timeout: 15, logger: .disabled)
    }

    /// Starts listening; returns the bound "HOST:PORT" (the real port when 0 was asked), or throws why
    /// it could not (port in use, address not on this host) within a few seconds.
    public func start() throws -> String {
        let outcome = StartOutcome()
        let settled = DispatchSemaphore(value: 0)
        let server = self.server
        let routes = self.routes
        let run = Task {
            // One handler for every path, the WebSocket included: it checks access before anything.
            await server.appendRoute("*", to: routes)
            do { try await server.run() } catch {
                outcome.settle(.failure(error))
                settled.signal()
            }
        }
        let listening = Task {
            do {
                try await server.waitUntilListening(timeout: 10)
                outcome.settle(.success(()))
            } catch {
                outcome.settle(.failure(error))
            }
            settled.signal()
        }
        // Samples go from the board into the histograms every second, scraped or not.
        let metrics = self.metrics
        let absorb = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                metrics.absorb()
            }
        }
        tasks.withLock { $0 = [run, listening, absorb] }
        _ = settled.wait(timeout: .now() + 12)
        switch outcome.result {
        case .success?: break
        case .failure(let e)?: stop(); throw e
        case nil: stop(); throw HTTPSideError(text: "the HTTP server did not start listening within 12 s")
        }
        let bound: String
        switch blockingValue({ await server.listeningAddress }) {
        case .ip4(let h, let p)?: bound = "\(h):\(p)"
        case .ip6(let h, let p)?: bound = "[\(h)]:\(p)"
        default: bound = "?"
        }
        return bound
    }

    /// Stops listening and closes the connection to the loop (before its ZeroMQ context terminates).
    public func stop() {
        let server = self.server
        // FlyingFox waits out the timeout for its accept loop after the socket is closed: 0.1 s, not 1 s,
        // so SIGTERM stops opcoord in a fraction of a second (open requests are cut at shutdown anyway).
        blockingValue { await server.stop(timeout: 0.1) }
        for t in tasks.withLock({ $0 }) { t.cancel() }
        reader.close()
    }
}

/// Whichever comes first: listening, or the error that stopped it.
private final class StartOutcome: Sendable {
    private let value = Mutex<Result<Void, any Error>?>(nil)
    func settle(_ r: Result<Void, any Error>) { value.withLock { if $0 == nil { $0 = r } } }
    var result: Result<Void, any Error>? { value.withLock { $0 } }
}

struct HTTPSideError: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}

/// Runs `body` on the concurrency pool and waits for it on this (non-pool) thread.
@discardableResult
func blockingValue<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task<Void, Never> {
        box.set(await body())
        done.signal()
    }
    done.wait()
    return box.get()!
}

private final class ResultBox<T: Sendable>: Sendable {
    private let value = Mutex<T?>(nil)
    func set(_ v: T) { value.withLock { $0 = v } }
    func get() -> T? { value.withLock { $0 } }
}
