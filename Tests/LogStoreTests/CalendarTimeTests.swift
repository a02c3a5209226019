import Foundation
import Testing

@testable import LogStore

@Suite("Calendar time")
struct CalendarTimeTests {
  @Test("known moments, before and after 1970, leap days and century years included")
  func knownMoments() {
    func time(_ seconds: Int64, micro: Int64 = 0) -> CalendarTime {
      CalendarTime(Timestamp(microsecondsSince1970: seconds * 1_000_000 + micro))
    }
    #expect(time(0) == CalendarTime(year: 1970, month: 1, day: 1, hour: 0, minute: 0, second: 0))
    #expect(
      time(-1, micro: 250_000)
        == CalendarTime(
          year: 1969, month: 12, day: 31, hour: 23, minute: 59, second: 59, microsecond: 250_000))
    #expect(
      time(951_782_400)
        == CalendarTime(year: 2000, month: 2, day: 29, hour: 0, minute: 0, second: 0))
    #expect(
      time(4_107_542_400)
        == CalendarTime(year: 2100, month: 3, day: 1, hour: 0, minute: 0, second: 0))
    #expect(
      time(2_147_483_648)
        == CalendarTime(year: 2038, month: 1, day: 19, hour: 3, minute: 14, second: 8))
    #expect(
      time(-62_135_596_800)
        == CalendarTime(year: 1, month: 1, day: 1, hour: 0, minute: 0, second: 0))
  }

  @Test("agrees with Foundation's Gregorian calendar on 2,000 seeded moments")
  func agreesWithFoundation() {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    var generator = SeededGenerator(seed: 12)
    for _ in 0..<2_000 {
      // 1600 to 2400: where Foundation's calendar is proleptic Gregorian too.
      let seconds = Int64.random(in: -11_676_096_000...13_569_465_600, using: &generator)
      let parts = calendar.dateComponents(
        [.year, .month, .day, .hour, .minute, .second],
        from: Date(timeIntervalSince1970: TimeInterval(seconds)))
      let expected = CalendarTime(
        year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!,
        minute: parts.minute!, second: parts.second!)
      #expect(CalendarTime(Timestamp(microsecondsSince1970: seconds * 1_000_000)) == expected)
    }
  }

  @Test("the extremes of the timestamp range do not trap")
  func extremes() {
    #expect(CalendarTime(Timestamp(microsecondsSince1970: .max)).year == 294_247)
    #expect(CalendarTime(Timestamp(microsecondsSince1970: .min)).year == -290_308)
  }

  @Test("day 0 is 1970-01-01, Julian 1969-12-19; Julian 1582-10-04 precedes 1582-10-15")
  func knownDays() {
    #expect(CalendarTime(daysSince1970: 0) == midnight(1970, 1, 1))
    #expect(CalendarTime(daysSince1970: 0, in: .julian) == midnight(1969, 12, 19))
    #expect(CalendarTime(daysSince1970: -1) == midnight(1969, 12, 31))
    #expect(CalendarTime(daysSince1970: 11_016) == midnight(2000, 2, 29))
    #expect(
      CalendarTime.daysSince1970(year: 1582, month: 10, day: 4, in: .julian) + 1
        == CalendarTime.daysSince1970(year: 1582, month: 10, day: 15))
    // Julian day number 0.
    #expect(CalendarTime(daysSince1970: -2_440_588, in: .julian) == midnight(-4712, 1, 1))
    #expect(CalendarTime.daysSince1970(year: -4712, month: 1, day: 1, in: .julian) == -2_440_588)
    // 1900 is a leap year only in the Julian calendar.
    #expect(
      CalendarTime.daysSince1970(year: 1900, month: 2, day: 29, in: .julian) + 1
        == CalendarTime.daysSince1970(year: 1900, month: 3, day: 1, in: .julian))
    #expect(
      CalendarTime.daysSince1970(year: 1900, month: 2, day: 29)
        == CalendarTime.daysSince1970(year: 1900, month: 3, day: 1))
  }

  @Test("a day past its month's end counts on into the next month")
  func dayPastMonthEnd() {
    for calendar in [CalendarTime.Calendar.gregorian, .julian] {
      #expect(
        CalendarTime.daysSince1970(year: 2023, month: 2, day: 30, in: calendar)
          == CalendarTime.daysSince1970(year: 2023, month: 3, day: 2, in: calendar))
      #expect(
        CalendarTime.daysSince1970(year: 2024, month: 4, day: 31, in: calendar)
          == CalendarTime.daysSince1970(year: 2024, month: 5, day: 1, in: calendar))
      #expect(
        CalendarTime.daysSince1970(year: 1999, month: 12, day: 32, in: calendar)
          == CalendarTime.daysSince1970(year: 2000, month: 1, day: 1, in: calendar))
    }
  }

  @Test("each day from -1000 to 3000 follows the last and reads back, in both calendars")
  func dayByDay() {
    for calendar in [CalendarTime.Calendar.gregorian, .julian] {
      func isLeap(_ year: Int) -> Bool {
        calendar == .julian
          ? year.isMultiple(of: 4)
          : year.isMultiple(of: 4) && (!year.isMultiple(of: 100) || year.isMultiple(of: 400))
      }
      func length(_ year: Int, _ month: Int) -> Int {
        month == 2 ? (isLeap(year) ? 29 : 28) : [4, 6, 9, 11].contains(month) ? 30 : 31
      }
      let first = CalendarTime.daysSince1970(year: -1000, month: 1, day: 1, in: calendar)
      let last = CalendarTime.daysSince1970(year: 3000, month: 12, day: 31, in: calendar)
      var expected = midnight(-1000, 1, 1)
      var mismatches = 0
      for days in first...last {
        let date = CalendarTime(daysSince1970: days, in: calendar)
        let back = CalendarTime.daysSince1970(
          year: date.year, month: date.month, day: date.day, in: calendar)
        if date != expected || back != days {
          mismatches += 1
          if mismatches <= 5 {
            Issue.record("\(calendar) day \(days): \(date), expected \(expected); back \(back)")
          }
        }
        if expected.day < length(expected.year, expected.month) {
          expected.day += 1
        } else if expected.month < 12 {
          (expected.month, expected.day) = (expected.month + 1, 1)
        } else {
          (expected.year, expected.month, expected.day) = (expected.year + 1, 1, 1)
        }
      }
      #expect(mismatches == 0, "\(calendar)")
      #expect(expected == midnight(3001, 1, 1))
    }
  }

  @Test("zero padding: at least the width, a minus sign first")
  func zeroPadding() {
    #expect(7.zeroPadded(width: 6) == "000007")
    #expect(UInt32(1_234_567).zeroPadded(width: 6) == "1234567")
    #expect((-5).zeroPadded(width: 4) == "-0005")
    #expect(Int64.min.zeroPadded(width: 1) == "-9223372036854775808")
  }

  @Test("ISO 8601, extended and basic, with and without microseconds")
  func iso8601() {
    let time = CalendarTime(Timestamp(microsecondsSince1970: 1_795_955_696_250_000))
    #expect(time.iso8601() == "2026-11-29T12:34:56Z")
    #expect(time.iso8601(microseconds: true) == "2026-11-29T12:34:56.250000Z")
    #expect(time.iso8601(basic: true) == "20261129T123456Z")
    let early = CalendarTime(Timestamp(microsecondsSince1970: -62_198_755_200_000_000))
    #expect(early.iso8601() == "-0001-01-01T00:00:00Z")
  }
}

/// Midnight of a date.
private func midnight(_ year: Int, _ month: Int, _ day: Int) -> CalendarTime {
  CalendarTime(year: year, month: month, day: day, hour: 0, minute: 0, second: 0)
}
