/// A moment as the Gregorian calendar in UTC has it, to the microsecond, computed from a
/// ``Timestamp`` without the C library: `gmtime_r` is a system call the engine keeps in its IO layer, and
/// its `time_t` is 32 bits on some platforms, which ends in 2038.
package struct CalendarTime: Equatable, Sendable {
  package var year, month, day, hour, minute, second: Int
  /// Microseconds into the second: 0...999_999.
  package var microsecond: Int

  package init(
    year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, microsecond: Int = 0
  ) {
    (self.year, self.month, self.day) = (year, month, day)
    (self.hour, self.minute, self.second) = (hour, minute, second)
    self.microsecond = microsecond
  }

  /// The moment `timestamp`: microseconds after 1970-01-01 00:00:00 UTC (before it, when
  /// negative), in the proleptic Gregorian calendar, leap seconds not counted (as in Unix
  /// time).
  ///
  /// Counts days from 0000-03-01 in 400-year eras of 146,097 days: starting the year in March
  /// puts the leap day last, so a day's place in its year fixes its month by a linear formula.
  /// Everything is in `Int64`, so no timestamp traps where `Int` is 32 bits: the `Int64`
  /// range of microseconds spans about 292,000 years either side of 1970.
  package init(_ timestamp: Timestamp) {
    let microsecondsPerDay: Int64 = 86_400_000_000
    var (days, microsecondOfDay) = timestamp.microsecondsSince1970.quotientAndRemainder(
      dividingBy: microsecondsPerDay)
    if microsecondOfDay < 0 {
      days -= 1
      microsecondOfDay += microsecondsPerDay
    }
    let secondOfDay = microsecondOfDay / 1_000_000
    // 719,468 days from 0000-03-01 to 1970-01-01.
    let sinceEpochStart = days + 719_468
    var era = sinceEpochStart / 146_097
    if sinceEpochStart < 0 && sinceEpochStart % 146_097 != 0 { era -= 1 }
    let dayOfEra = sinceEpochStart - era * 146_097  // 0...146_096
    // Years of 365 days, less the leap days so far (every 4th, but not every 100th, but
    // every 400th year: the last day of the era is the fourth century's leap day).
    let yearOfEra =
      (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0...399
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365
    // Months from March have 31, 30, 31, 30, 31 days, repeating: 153 days every 5 months.
    let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0...11
    let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
    let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
    let year = era * 400 + yearOfEra + (month <= 2 ? 1 : 0)
    self.init(
      year: Int(year), month: Int(month), day: Int(day), hour: Int(secondOfDay / 3_600),
      minute: Int(secondOfDay % 3_600 / 60), second: Int(secondOfDay % 60),
      microsecond: Int(microsecondOfDay % 1_000_000))
  }

  /// The moment in ISO 8601, in UTC: the extended form (`2026-11-29T12:34:56Z`), or the basic
  /// one without separators (`20261129T123456Z`, for file names); with `microseconds`, the
  /// second has six decimals (`12:34:56.250000Z`). Years before 1 and after 9999 keep their
  /// sign and every digit.
  package func iso8601(basic: Bool = false, microseconds: Bool = false) -> String {
    let dateSeparator = basic ? "" : "-"
    let timeSeparator = basic ? "" : ":"
    let fraction = microseconds ? "." + microsecond.zeroPadded(width: 6) : ""
    return year.zeroPadded(width: 4) + dateSeparator + month.zeroPadded(width: 2)
      + dateSeparator + day.zeroPadded(width: 2) + "T" + hour.zeroPadded(width: 2)
      + timeSeparator + minute.zeroPadded(width: 2) + timeSeparator
      + second.zeroPadded(width: 2) + fraction + "Z"
  }
}
