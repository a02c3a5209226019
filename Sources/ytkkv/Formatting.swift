import LogStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Text forms shared by the commands.
enum Formatting {
  /// `2015-11-20T06:07:41.250000Z`: a timestamp as ISO 8601 in UTC, to the microsecond; one
  /// the C library's time cannot hold (a damaged record's, or past 2038 where `time_t` is 32
  /// bits) as seconds since 1970.
  static func iso8601(_ timestamp: Timestamp) -> String {
    let micros = timestamp.microsecondsSince1970
    var (whole, fraction) = micros.quotientAndRemainder(dividingBy: 1_000_000)
    if fraction < 0 {
      whole -= 1
      fraction += 1_000_000
    }
    var parts = tm()
    guard var seconds = time_t(exactly: whole), gmtime_r(&seconds, &parts) != nil else {
      return seconds(timestamp) + " s since 1970"
    }
    func pad(_ value: Int32, _ width: Int) -> String {
      let digits = String(value)
      return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    let fractionDigits = String(fraction)
    return
      "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))"
      + "T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))."
      + String(repeating: "0", count: 6 - fractionDigits.count) + fractionDigits + "Z"
  }

  /// A timestamp as seconds since 1970 with up to six decimals, exactly: `1448000061.25`.
  static func seconds(_ timestamp: Timestamp) -> String {
    let micros = timestamp.microsecondsSince1970
    let magnitude = micros.magnitude
    let sign = micros < 0 ? "-" : ""
    let seconds = magnitude / 1_000_000
    let fraction = magnitude % 1_000_000
    guard fraction != 0 else { return sign + String(seconds) }
    var digits = String(fraction)
    digits = String(repeating: "0", count: 6 - digits.count) + digits
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
