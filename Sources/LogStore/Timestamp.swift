/// A point in time, in microseconds since 1970-01-01 00:00:00 UTC: when a value was written.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Microseconds since 1970-01-01 00:00:00 UTC.
  public var microsecondsSince1970: Int64

  /// The point `microsecondsSince1970` microseconds after 1970-01-01 00:00:00 UTC.
  public init(microsecondsSince1970: Int64) {
    self.microsecondsSince1970 = microsecondsSince1970
  }

  /// As an expiry, never (``LogStore/put(_:forKey:in:timestamp:expiresAt:)``): the one
  /// spelling of "never expires" in the engine.
  public static let never = Timestamp(microsecondsSince1970: .max)

  /// The wall-clock time now (`CLOCK_REALTIME`).
  public static func now() -> Timestamp {
    Timestamp(microsecondsSince1970: wallClockMicroseconds())
  }

  /// Whether `a` is earlier than `b`.
  public static func < (a: Timestamp, b: Timestamp) -> Bool {
    a.microsecondsSince1970 < b.microsecondsSince1970
  }

  /// The microseconds since 1970, as text.
  public var description: String { "\(microsecondsSince1970)µs since 1970" }
}
