import LogStore

/// Text forms shared by the commands.
enum Formatting {
  /// `2015-11-20T06:07:41.250000Z`: a timestamp as ISO 8601 in UTC, to the microsecond. Every
  /// timestamp has one (a damaged record's too, and those past 2038 where the C library's
  /// `time_t` is 32 bits): the date is computed, not asked of the C library.
  static func iso8601(_ timestamp: Timestamp) -> String {
    CalendarTime(timestamp).iso8601(microseconds: true)
  }

  /// A timestamp as seconds since 1970 with up to six decimals, exactly: `1448000061.25`.
  static func seconds(_ timestamp: Timestamp) -> String {
    let micros = timestamp.microsecondsSince1970
    let magnitude = micros.magnitude
    let sign = micros < 0 ? "-" : ""
    let seconds = magnitude / 1_000_000
    let fraction = magnitude % 1_000_000
    guard fraction != 0 else { return sign + String(seconds) }
    var digits = fraction.zeroPadded(width: 6)
    while digits.hasSuffix("0") { digits.removeLast() }
    return "\(sign)\(seconds).\(digits)"
  }

  /// A byte count for people: `1.5 MiB`.
  static func bytes(_ count: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(count)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    if unit == 0 { return "\(count) B" }
    let tenths = (value * 10).rounded() / 10
    return "\(tenths) \(units[unit])"
  }
}
