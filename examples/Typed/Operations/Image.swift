import Foundation

/// A small RGB picture, the value the image operations hand each other. It travels as an operation's
/// output (keep it small: an output is at most 1 MiB on the wire), so the examples use thumbnails.
public struct Image: Codable, Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// Row by row, three bytes (red, green, blue) per pixel.
    public var pixels: Data

    public init(width: Int, height: Int, pixels: Data) {
        precondition(pixels.count == width * height * 3, "an image of \(width)×\(height) needs \(width * height * 3) bytes")
        (self.width, self.height, self.pixels) = (width, height, pixels)
    }

    /// A picture made from `seed` (no network in the examples: "downloading" draws one).
    public static func gradient(seed: Int, width: Int, height: Int) -> Image {
        var pixels = Data(count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let o = (y * width + x) * 3
                pixels[o] = UInt8((x * 255 / width + seed * 37) % 256)
                pixels[o + 1] = UInt8((y * 255 / height + seed * 11) % 256)
                pixels[o + 2] = UInt8(((x + y) * 2 + seed * 53) % 256)
            }
        }
        return Image(width: width, height: height, pixels: pixels)
    }

    /// The pixel at (x, y), clamped to the edges.
    public func pixel(_ x: Int, _ y: Int) -> (r: Int, g: Int, b: Int) {
        let o = (min(max(y, 0), height - 1) * width + min(max(x, 0), width - 1)) * 3
        return (Int(pixels[o]), Int(pixels[o + 1]), Int(pixels[o + 2]))
    }

    /// The image as a binary PPM file (P6), which most image viewers open.
    public var ppm: Data { Data("P6\n\(width) \(height)\n255\n".utf8) + pixels }
}
