import ClusterTestSupport
import WireProtocol

/// `Message` alone is ambiguous here: ZeroMQ has one too (a frame). This is the protocol's.
typealias Message = WireProtocol.Message
