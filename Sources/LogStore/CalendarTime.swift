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
    self.init(daysSince1970: days)
    hour = Int(secondOfDay / 3_600)
    minute = Int(secondOfDay % 3_600 / 60)
    second = Int(secondOfDay % 60)
    microsecond = Int(microsecondOfDay % 1_000_000)
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

// MARK: - Days and dates

extension CalendarTime {
  /// A calendar a date can be given in. Both count the same days: the day after Julian
  /// 1582-10-04 is Gregorian 1582-10-15.
  package enum Calendar: Sendable {
    /// The Gregorian calendar, proleptic (its leap years before 1582 too): the engine's.
    case gregorian
    /// The Julian calendar, a leap year every fourth year: Foundation's before 1582-10-15,
    /// which the ISO 8601 dates of `Codable` values follow (`CodingStrategies`).
    case julian

    /// The calendar's 400 or 4 years' cycle of leap years, and where its dates are counted
    /// from: 0000-03-01, so that the leap day ends a year and a day's place in its year fixes
    /// its month by a linear formula.
    fileprivate var era: (days: Int64, years: Int64, daysTo1970: Int64) {
      switch self {
      case .gregorian: (146_097, 400, 719_468)
      case .julian: (1_461, 4, 719_470)
      }
    }
  }

  /// Midnight of the day `days` after 1970-01-01 (before it, when negative), in `calendar`.
  ///
  /// Counts days from 0000-03-01 in eras of 146,097 days (400 Gregorian years) or 1,461
  /// (4 Julian years), in `Int64`. The year must fit an `Int`, as every year of a
  /// ``Timestamp`` does.
  package init(daysSince1970 days: Int64, in calendar: Calendar = .gregorian) {
    let era = calendar.era
    let sinceStart = days + era.daysTo1970  // days since 0000-03-01
    var eras = sinceStart / era.days
    if sinceStart < 0 && sinceStart % era.days != 0 { eras -= 1 }
    let dayOfEra = sinceStart - eras * era.days
    // Years of 365 days, less the leap days so far (every 4th, but not every 100th, but
    // every 400th year: the last day of a Gregorian era is the fourth century's leap day).
    // A Julian era is four years: only its last day, the leap day, counts.
    let yearOfEra =
      (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365
    // Months from March have 31, 30, 31, 30, 31 days, repeating: 153 days every 5 months.
    let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0...11
    let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
    let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
    let year = eras * era.years + yearOfEra + (month <= 2 ? 1 : 0)
    self.init(year: Int(year), month: Int(month), day: Int(day), hour: 0, minute: 0, second: 0)
  }

  /// The days from 1970-01-01 to `year`-`month`-`day` in `calendar` (negative before it):
  /// the inverse of ``init(daysSince1970:in:)``. `month` is 1 to 12; a `day` past the
  /// month's end counts on into the next months (February 30 is March 1 or 2).
  package static func daysSince1970(
    year: Int, month: Int, day: Int, in calendar: Calendar = .gregorian
  ) -> Int64 {
    let era = calendar.era
    // The year from March: January and February end the year before.
    let marchYear = Int64(year) - (month <= 2 ? 1 : 0)
    var eras = marchYear / era.years
    if marchYear < 0 && marchYear % era.years != 0 { eras -= 1 }
    let yearOfEra = marchYear - eras * era.years
    let monthFromMarch = Int64(month <= 2 ? month + 9 : month - 3)
    let dayOfYear = (153 * monthFromMarch + 2) / 5 + Int64(day) - 1
    let dayOfEra = 365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return eras * era.days + dayOfEra - era.daysTo1970
  }
}
