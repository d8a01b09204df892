import ArgumentParser
import Foundation
import WorkerAgent
import WorkerRuntime

/// A PPM (P6) image: width × height RGB pixels.
struct PPM {
    var width: Int, height: Int, pixels: [UInt8]

    var bytes: [UInt8] { Array("P6\n\(width) \(height)\n255\n".utf8) + pixels }

    init(width: Int, height: Int, pixels: [UInt8]) { (self.width, self.height, self.pixels) = (width, height, pixels) }

    /// Parses the P6 files `download` writes (no comments).
    init(_ data: [UInt8]) throws {
        var fields: [String] = [], i = 0, current = ""
        while fields.count < 4, i < data.count {
            let c = data[i]; i += 1
            if c == 0x20 || c == 0x0A || c == 0x09 || c == 0x0D {
                if !current.isEmpty { fields.append(current); current = "" }
            } else { current.append(Character(UnicodeScalar(c))) }
        }
        guard fields.count == 4, fields[0] == "P6", let w = Int(fields[1]), let h = Int(fields[2]), data.count - i >= w * h * 3 else {
            throw HandlerError("not a P6 image")
        }
        (width, height, pixels) = (w, h, Array(data[i..<(i + w * h * 3)]))
    }
}

/// "Downloads" an image: payload `path` and `seed`; there is no network here, so it generates a
/// gradient picture after a simulated fetch delay, writes it to `path` and returns the path.
struct Download: OperationHandler {
    var kind: String { "download" }

    func run(_ context: OperationContext) async throws -> [UInt8] {
        let parts = String(decoding: context.payload, as: UTF8.self).split(separator: " ")
        guard parts.count == 2, let seed = Int(parts[1]) else { throw HandlerError("payload must be 'PATH SEED'") }
        try await Task.sleep(for: .milliseconds(150 + seed % 5 * 40))     // the fetch; a cancel ends it at once
        let (w, h) = (160, 120)
        var pixels = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            for x in 0..<w {
                let o = (y * w + x) * 3
                pixels[o] = UInt8((x * 255 / w + seed * 37) % 256)
                pixels[o + 1] = UInt8((y * 255 / h + seed * 11) % 256)
                pixels[o + 2] = UInt8(((x + y) * 2 + seed * 53) % 256)
            }
        }
        try Data(PPM(width: w, height: h, pixels: pixels).bytes).write(to: URL(fileURLWithPath: String(parts[0])))
        return Array(parts[0].utf8)
    }
}

/// Sepia filter: reads the image whose path its dependency returned, writes the filtered one to the
/// path in its payload, reports progress per 20 rows, and stops when cancelled.
struct Sepia: OperationHandler {
    var kind: String { "sepia" }

    func run(_ context: OperationContext) async throws -> [UInt8] {
        guard let input = context.inputList.first else { throw HandlerError("sepia needs its download as a dependency") }
        let source = String(decoding: input.result, as: UTF8.self)
        var image = try PPM(Array(try Data(contentsOf: URL(fileURLWithPath: source))))
        for y in 0..<image.height {
            if y % 20 == 0 {
                try Task.checkCancellation()
                context.reportProgress(Double(y) / Double(image.height), message: nil)
                try await Task.sleep(for: .milliseconds(25))                // a slower filter than it really is
            }
            for x in 0..<image.width {
                let o = (y * image.width + x) * 3
                let (r, g, b) = (Double(image.pixels[o]), Double(image.pixels[o + 1]), Double(image.pixels[o + 2]))
                image.pixels[o] = UInt8(min(255, 0.393 * r + 0.769 * g + 0.189 * b))
                image.pixels[o + 1] = UInt8(min(255, 0.349 * r + 0.686 * g + 0.168 * b))
                image.pixels[o + 2] = UInt8(min(255, 0.272 * r + 0.534 * g + 0.131 * b))
            }
        }
        let output = String(decoding: context.payload, as: UTF8.self)
        try Data(image.bytes).write(to: URL(fileURLWithPath: output))
        return Array(output.utf8)
    }
}

/// opworker with two more kinds: `download` and `sepia` (docs/HANDLERS.md, "Worker entry point").
@main
struct ImageWorker: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "imagepipeline-worker")
    @OptionGroup var options: WorkerOptions

    func run() throws {
        var registry = HandlerRegistry()
        registry.register(Download())
        registry.register(Sepia())
        try WorkerMain.run(options: options, registry: registry)
    }
}
