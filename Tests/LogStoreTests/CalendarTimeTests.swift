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
