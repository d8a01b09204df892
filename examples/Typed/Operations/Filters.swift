import DistributedOperationQueue
import Foundation

// The tutorial's `ImageFiltration`, as a chain of three operations: Download → Sepia → Blur → Thumbnail.
// Each takes the picture its dependency returned (`context.output(of:)`, decoded, no bytes) and
// returns a new one. Each checks for cancellation between rows, as the tutorial's `main` checks
// `isCancelled`, and reports how far it got.

/// Sepia tones the downloaded photo (its dependency: a `Download`).
public struct Sepia: DistributedOperation {
    public init() {}

    public func main(_ context: OperationContext) async throws -> Image {
        let source = try context.output(of: Download.self)
        return try await filter(source, context) { image, x, y in
            let (r, g, b) = image.pixel(x, y)
            let tone = { (a: Double, b2: Double, c: Double) in UInt8(min(255, a * Double(r) + b2 * Double(g) + c * Double(b))) }
            return (tone(0.393, 0.769, 0.189), tone(0.349, 0.686, 0.168), tone(0.272, 0.534, 0.131))
        }
    }
}

/// Blurs the sepia picture (its dependency: a `Sepia`) with a box of `radius` pixels.
public struct Blur: DistributedOperation {
    public var radius: Int
    public init(radius: Int = 1) { self.radius = radius }

    public func main(_ context: OperationContext) async throws -> Image {
        let source = try context.output(of: Sepia.self)
        let r = max(0, radius), count = (2 * r + 1) * (2 * r + 1)
        return try await filter(source, context) { image, x, y in
            var sum = (0, 0, 0)
            for dy in -r...r {
                for dx in -r...r {
                    let p = image.pixel(x + dx, y + dy)
                    sum = (sum.0 + p.r, sum.1 + p.g, sum.2 + p.b)
                }
            }
            return (UInt8(sum.0 / count), UInt8(sum.1 / count), UInt8(sum.2 / count))
        }
    }
}

/// Scales the blurred picture (its dependency: a `Blur`) down to `side` pixels wide: the row's icon.
public struct Thumbnail: DistributedOperation {
    public var side: Int
    public init(side: Int = 32) { self.side = side }

    public func main(_ context: OperationContext) async throws -> Image {
        let source = try context.output(of: Blur.self)
        let width = max(1, min(side, source.width))
        let height = max(1, source.height * width / source.width)
        var pixels = Data(count: width * height * 3)
        for y in 0..<height {
            try Task.checkCancellation()
            for x in 0..<width {
                let p = source.pixel(x * source.width / width, y * source.height / height)
                let o = (y * width + x) * 3
                (pixels[o], pixels[o + 1], pixels[o + 2]) = (UInt8(p.r), UInt8(p.g), UInt8(p.b))
            }
        }
        return Image(width: width, height: height, pixels: pixels)
    }
}

/// Runs `pixel` over every pixel of `source`, stopping when the operation is cancelled and reporting
/// progress every 16 rows.
func filter(_ source: Image, _ context: OperationContext,
            _ pixel: (Image, Int, Int) -> (UInt8, UInt8, UInt8)) async throws -> Image {
    var pixels = Data(count: source.pixels.count)
    for y in 0..<source.height {
        if y % 16 == 0 {
            if context.isCancelled { throw CancellationError() }
            context.reportProgress(Double(y) / Double(source.height), message: nil)
            await Task.yield()
        }
        for x in 0..<source.width {
            let o = (y * source.width + x) * 3
            (pixels[o], pixels[o + 1], pixels[o + 2]) = pixel(source, x, y)
        }
    }
    return Image(width: source.width, height: source.height, pixels: pixels)
}
