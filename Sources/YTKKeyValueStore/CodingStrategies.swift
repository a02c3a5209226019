import LogStore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// How a store writes dates, `Data` and keys of `Encodable` values, and reads them back into
/// `Decodable` ones: a few of `JSONEncoder`'s and `JSONDecoder`'s strategies, chosen once per
/// store with ``StoreOptions/coding``.
///
/// The default is Foundation's defaults, so that what a store holds is what `JSONEncoder()`
/// would write and `JSONDecoder()` reads it back. Each strategy gives, byte for byte, what
/// `JSONEncoder` and `JSONDecoder` give with the strategy of the same name, and accepts and
/// refuses the same text.
///
/// ```swift
/// struct Event: Codable { var startDate: Date }
///
/// var options = StoreOptions()
/// options.coding = CodingStrategies(dates: .iso8601, keys: .snakeCase)
/// let store = try KeyValueStore(path: "events.db", options: options)
/// try store.createTable("events")
/// let event = Event(startDate: Date(timeIntervalSince1970: 1_714_555_800))
/// try store.put(encodable: event, id: "e1", into: "events")
/// // Stored as {"start_date":"2024-05-01T09:30:00Z"}
/// let again = try store.decode(Event.self, id: "e1", from: "events")
/// ```
///
/// Custom closures and `DateFormatter`s are not offered: options are `Sendable` and
/// `Equatable`, which a closure or a formatter is not; encode such a value in the type's own
/// `encode(to:)`.
///
/// The strategies apply to ``KeyValueStore/put(encodable:id:into:expiresAfter:)``,
/// ``KeyValueStore/put(encodables:into:expiresAfter:)``, ``KeyValueStore/decode(_:id:from:)`` and
/// ``KeyValueStore/items(as:withPrefix:in:)``; values put and read as ``JSONValue`` are
/// stored as they are. They are not recorded in the store: open it with the strategies it
/// was written with.
public struct CodingStrategies: Sendable, Equatable {
  /// How a `Date` is stored.
  public enum DateStrategy: Sendable, Equatable {
    /// Seconds since 2001-01-01 00:00 UTC, as a number: what `Date`'s own `encode(to:)`
    /// writes. The default.
    case deferredToDate
    /// Seconds since 1970-01-01 00:00 UTC, as a number.
    case secondsSince1970
    /// Milliseconds since 1970-01-01 00:00 UTC, as a number.
    case millisecondsSince1970
    /// An ISO 8601 internet date and time in UTC, to the second: `"2024-05-01T09:30:00Z"`
    /// (a fraction of a second is dropped, as `JSONEncoder` drops it; dates before
    /// 1582-10-15 are in the Julian calendar, as Foundation's are). Reading accepts what
    /// Swift 6.2's `JSONDecoder` accepts: a fraction of up to nine digits, and a `Z` or an
    /// offset such as `+08:00`. (Before 6.2, Foundation's reader refused a fraction.)
    case iso8601
  }

  /// How a `Data` is stored.
  public enum DataStrategy: Sendable, Equatable {
    /// A base64 string. The default.
    case base64
    /// An array of byte numbers: what `Data`'s own `encode(to:)` writes.
    case deferredToData
  }

  /// How the keys of keyed containers are spelled in the stored JSON.
  public enum KeyStrategy: Sendable, Equatable {
    /// Each key's `stringValue` as it is. The default.
    case useDefaultKeys
    /// `snake_case` in the stored JSON, `camelCase` in Swift: `JSONEncoder`'s
    /// `.convertToSnakeCase` (`myURLValue` is stored as `my_url_value`) and `JSONDecoder`'s
    /// `.convertFromSnakeCase` (`my_url_value` is read as `myUrlValue`: a key with an
    /// acronym does not come back by itself, as with Foundation). Leading and trailing
    /// underscores are kept. The keys of a `[String: Value]` dictionary are not converted.
    case snakeCase
  }

  /// How dates are stored. Default `.deferredToDate`.
  public var dates: DateStrategy
  /// How `Data` is stored. Default `.base64`.
  public var data: DataStrategy
  /// How keys are spelled. Default `.useDefaultKeys`.
  public var keys: KeyStrategy

  /// Strategies as given, the others at `JSONEncoder`'s and `JSONDecoder`'s defaults.
  public init(
    dates: DateStrategy = .deferredToDate, data: DataStrategy = .base64,
    keys: KeyStrategy = .useDefaultKeys
  ) {
    self.dates = dates
    self.data = data
    self.keys = keys
  }
}

// MARK: - ISO 8601

/// Dates as ISO 8601 text, as Foundation's `.iso8601` date strategies write and read it
/// (`Date.ISO8601FormatStyle()`), without a formatter.
///
/// Foundation's calendar is Gregorian from 1582-10-15 and Julian before it, so 1582-10-04 is
/// the day before 1582-10-15. The days and dates are the engine's calendar's
/// (``CalendarTime``, in either calendar); the arithmetic between seconds and days here takes
/// Foundation's steps in Foundation's floating-point order, so that every date gives the same
/// text and every text the same date, to the bit.
enum ISO8601DateText {
  /// The text of `date`: `yyyy-MM-ddTHH:mm:ssZ`, the seconds rounded down. A year before 1 is
  /// astronomical (the year before 1 is 0000, then -0001, which the reader refuses, as
  /// Foundation's does), a year past 9999 has more digits.
  /// Dates outside Foundation's calendar, -4712-01-01T12:00:00Z to 506713-02-07T00:00:00Z,
  /// are written as its nearest end, as Foundation writes them; NaN as its start.
  static func text(of date: Date) -> String {
    // `Date.capped`, with `Date`'s comparisons: NaN is not above the end, and not above the
    // start either.
    var time = date.timeIntervalSinceReferenceDate
    if calendarEnd < time { time = calendarEnd }
    if !(calendarStart < time) { time = calendarStart }
    let seconds = time.rounded(.down)
    let julianDay = (seconds / 86400 + julianDayAtReferenceDate + 0.5).rounded(.down)
    var moment = CalendarTime(
      daysSince1970: Int64(julianDay) - julianDayOf1970,
      in: seconds < gregorianStart ? .julian : .gregorian)
    var timeOfDay = seconds.remainder(dividingBy: 86400)
    if timeOfDay < 0 { timeOfDay += 86400 }
    moment.hour = Int(timeOfDay / 3600)
    timeOfDay = timeOfDay.truncatingRemainder(dividingBy: 3600)
    moment.minute = Int(timeOfDay / 60)
    moment.second = Int(timeOfDay.truncatingRemainder(dividingBy: 60))
    return moment.iso8601()
  }

  /// The date `text` names, or nil if Foundation's `.iso8601` refuses it.
  ///
  /// What is read: a year of 1 to 10 digits, `-`, a month 1 to 12, `-`, a day 1 to 31 (a day
  /// past the month's end runs into the next month), `T`, then hour, minute and second of 1
  /// to 10 digits each, separated by `:` (not range-checked: `25:00:00` is the next day's
  /// 01:00), an optional `.` and 1 to 9 digits of fraction, then the time zone: `Z` or `z`;
  /// `GMT` or `UTC` in any case, alone or followed by an offset; or an offset: `+` or `-`,
  /// hours of 1 or 2 digits, optionally minutes (after an optional `:`), optionally seconds
  /// (likewise), at most 18 hours. Whatever follows is ignored. Years past 506714 and times
  /// past 2^31 - 1 hours, minutes or seconds are refused.
  static func date(from text: String) -> Date? {
    var text = text
    return text.withUTF8 { date(from: $0) }
  }

  private static func date(from text: UnsafeBufferPointer<UInt8>) -> Date? {
    guard !text.isEmpty else { return nil }
    var reader = Reader(text: text)
    guard let year = reader.number(), reader.skip("-"),
      let month = reader.number(), (1...12).contains(month), reader.skip("-"),
      let day = reader.number(), (1...31).contains(day), reader.skip("T"),
      let hour = reader.number(), reader.skip(":"),
      let minute = reader.number(), reader.skip(":"),
      let second = reader.number()
    else { return nil }
    var nanosecond: Int?
    if reader.skip(".") {
      // Nine digits at most: ten are refused, not cut short.
      guard let (fraction, digits) = reader.digits(atMost: 10), digits <= 9 else { return nil }
      var scale = 1
      for _ in digits..<9 { scale *= 10 }
      nanosecond = Int(fraction) * scale
    }
    guard let offset = reader.timeZoneOffset(),
      year <= 506_714, hour <= Int64(Int32.max), minute <= Int64(Int32.max),
      second <= Int64(Int32.max)
    else { return nil }

    // Each fits an `Int` now, where it is 32 bits too.
    let date = (year: Int(year), month: Int(month), day: Int(day))
    var julianDay =
      CalendarTime.daysSince1970(year: date.year, month: date.month, day: date.day)
      + julianDayOf1970
    if julianDay < gregorianStartJulianDay {
      julianDay =
        CalendarTime.daysSince1970(year: date.year, month: date.month, day: date.day, in: .julian)
        + julianDayOf1970
    }
    var secondsInDay = Double(hour) * 3600
    secondsInDay += Double(minute) * 60
    secondsInDay += Double(second)
    if let nanosecond { secondsInDay += Double(nanosecond) / 1_000_000_000 }
    // From the Julian day's noon back to midnight, then the time of day, then to UTC.
    var time = (Double(julianDay) - julianDayAtReferenceDate) * 86400
    time -= 43200
    time += secondsInDay
    time -= Double(offset)
    return Date(timeIntervalSinceReferenceDate: time)
  }

  /// The Julian date of 2001-01-01 00:00 UTC, the reference date.
  private static let julianDayAtReferenceDate = 2_451_910.5
  /// The Julian day number of 1970-01-01, the day ``CalendarTime`` counts from.
  private static let julianDayOf1970: Int64 = 2_440_588
  /// The range of Foundation's calendar (`Date.validCalendarRange`), in seconds since 2001.
  private static let calendarStart = -211_845_067_200.0
  private static let calendarEnd = 15_927_175_497_600.0
  /// 1582-10-15 00:00 UTC, the first day of the Gregorian calendar, in seconds since 2001.
  private static let gregorianStart = -13_197_600_000.0
  /// The Julian day number of 1582-10-15.
  private static let gregorianStartJulianDay: Int64 = 2_299_161

  /// Reads the text byte by byte, as Foundation's parser does.
  private struct Reader {
    let text: UnsafeBufferPointer<UInt8>
    var position = 0

    var next: UInt8? { position < text.count ? text[position] : nil }

    /// Moves past `byte` if it is next.
    mutating func skip(_ byte: Unicode.Scalar) -> Bool {
      guard next == UInt8(ascii: byte) else { return false }
      position += 1
      return true
    }

    /// Moves past the next byte if it is `byte` in either case.
    mutating func skipLetter(_ byte: Unicode.Scalar) -> Bool {
      guard let next, next | 0x20 == UInt8(ascii: byte) else { return false }
      position += 1
      return true
    }

    /// Reads up to `limit` digits (stopping there even if more follow); nil if none. In
    /// `Int64`: ten digits pass what `Int` holds where it is 32 bits.
    mutating func digits(atMost limit: Int) -> (value: Int64, count: Int)? {
      var value: Int64 = 0
      var count = 0
      while count < limit, let next, next &- UInt8(ascii: "0") < 10 {
        value = value * 10 + Int64(next &- UInt8(ascii: "0"))
        position += 1
        count += 1
      }
      return count > 0 ? (value, count) : nil
    }

    /// A number of up to 10 digits, or `limit` if that is smaller.
    mutating func number(atMost limit: Int = 10) -> Int64? {
      digits(atMost: limit)?.value
    }

    /// The time zone that ends the text, as seconds east of UTC; nil if there is none.
    mutating func timeZoneOffset() -> Int? {
      guard let first = next else { return nil }
      position += 1
      var sign = 1
      switch first {
      case UInt8(ascii: "Z"), UInt8(ascii: "z"):
        return 0
      case UInt8(ascii: "G"), UInt8(ascii: "g"), UInt8(ascii: "U"), UInt8(ascii: "u"):
        let isGMT = first | 0x20 == UInt8(ascii: "g")
        guard isGMT ? skipLetter("m") && skipLetter("t") : skipLetter("t") && skipLetter("c")
        else { return nil }
        // Alone, or followed by an offset.
        if skip("-") {
          sign = -1
        } else if !skip("+") {
          return 0
        }
      case UInt8(ascii: "+"):
        break
      case UInt8(ascii: "-"):
        sign = -1
      default:
        return nil
      }
      guard let hours = number(atMost: 2) else { return nil }
      var offset = Int(hours) * 3600
      if next == UInt8(ascii: ":") || next.map({ $0 &- UInt8(ascii: "0") < 10 }) == true {
        _ = skip(":")
        guard let minutes = number(atMost: 2) else { return nil }
        offset += Int(minutes) * 60
        _ = skip(":")
        // Seconds, if digits follow (`number` reads nothing otherwise).
        if let seconds = number(atMost: 2) { offset += Int(seconds) }
      }
      guard offset <= 18 * 3600 else { return nil }
      return sign * offset
    }
  }
}

// MARK: - Snake case

/// Keys in `snake_case`: Foundation's `.convertToSnakeCase` and `.convertFromSnakeCase`.
///
/// Both take the same steps over the same indices as Foundation's (the word boundaries are
/// found among Unicode scalars, moved by characters), so that keys with combining marks or
/// other unusual text convert as they do with `JSONEncoder` and `JSONDecoder`.
enum SnakeCaseKeys {
  /// `myURLValue` as `my_url_value`: a word starts at a capital after a small letter, and
  /// at the last capital of a run of capitals followed by a small letter; the words are
  /// joined with `_` and lowercased. The first character never starts a word, so leading
  /// underscores are kept; a capital is a Unicode uppercase or titlecase letter.
  static func snakeCased(_ key: String) -> String {
    // ASCII without capitals is its own snake case (and the usual key).
    if key.utf8.allSatisfy({ $0 < 0x80 && $0 &- UInt8(ascii: "A") >= 26 }) { return key }
    let scalars = key.unicodeScalars
    /// The first scalar of `key[range]` that `matches`.
    func first(in range: Range<String.Index>, _ matches: (Unicode.Scalar) -> Bool) -> String.Index?
    {
      var index = range.lowerBound
      while index < range.upperBound {
        if matches(scalars[index]) { return index }
        scalars.formIndex(after: &index)
      }
      return nil
    }
    var words: [Range<String.Index>] = []
    var wordStart = key.startIndex
    var searchRange = key.index(after: wordStart)..<key.endIndex
    while let capital = first(in: searchRange, isCapital) {
      words.append(wordStart..<capital)
      searchRange = capital..<searchRange.upperBound
      guard let small = first(in: searchRange, isSmall) else {
        // Capitals to the end: one word.
        wordStart = searchRange.lowerBound
        break
      }
      if small == key.index(after: capital) {
        // A capitalized word: it goes on to the next capital.
        wordStart = capital
      } else {
        // A run of capitals is a word of its own but for its last, which starts the next.
        let beforeSmall = key.index(before: small)
        words.append(capital..<beforeSmall)
        wordStart = beforeSmall
      }
      searchRange = scalars.index(after: small)..<searchRange.upperBound
    }
    words.append(wordStart..<searchRange.upperBound)
    return words.map { key[$0].lowercased() }.joined(separator: "_")
  }

  /// `my_url_value` as `myUrlValue`: between the leading and trailing underscores (kept as
  /// they are), the words between underscores are joined, the first lowercased and the
  /// others capitalized (Foundation's `capitalized`). A key without inner underscores is
  /// kept as it is.
  static func camelCased(_ key: String) -> String {
    guard key.utf8.contains(UInt8(ascii: "_")),
      let first = key.firstIndex(where: { $0 != "_" })
    else { return key }
    var last = key.index(before: key.endIndex)
    while last > first && key[last] == "_" { key.formIndex(before: &last) }
    let words = key[first...last].split(separator: "_")
    guard words.count > 1 else { return key }
    var converted = String(key[..<first]) + words[0].lowercased()
    for word in words.dropFirst() { converted += word.capitalized }
    return converted + String(key[key.index(after: last)...])
  }

  private static func isCapital(_ scalar: Unicode.Scalar) -> Bool {
    let category = scalar.properties.generalCategory
    return category == .uppercaseLetter || category == .titlecaseLetter
  }

  private static func isSmall(_ scalar: Unicode.Scalar) -> Bool {
    scalar.properties.generalCategory == .lowercaseLetter
  }
}
