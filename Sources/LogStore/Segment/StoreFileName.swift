/// The names of a store's files. A segment is `NNNNNN.log` (the number in decimal, at least
/// six digits), its hint file `NNNNNN.hint`; files being written by compaction carry a
/// `.tmp` suffix until they are complete.
package enum StoreFileName {
  static let lock = "LOCK"
  static let temporarySuffix = ".tmp"
  /// File numbers are below this.
  static let maximumNumber: UInt32 = 1 << 31

  package static func segment(_ number: UInt32) -> String {
    number.zeroPadded(width: 6) + ".log"
  }
  package static func hint(_ number: UInt32) -> String { number.zeroPadded(width: 6) + ".hint" }
  package static func index(_ number: UInt32) -> String { number.zeroPadded(width: 6) + ".index" }

  /// What a directory entry is, judged by its name.
  enum Kind: Equatable {
    case segment(UInt32)
    case hint(UInt32)
    case index(UInt32)
    case temporary
    case other
  }

  static func classify(_ name: String) -> Kind {
    if name.hasSuffix(temporarySuffix) { return .temporary }
    for (suffix, make) in [(".log", Kind.segment), (".hint", Kind.hint), (".index", Kind.index)] {
      guard name.hasSuffix(suffix) else { continue }
      let digits = name.dropLast(suffix.count)
      // Numbers stay below 2^31 (a store would need billions of segments to get there), so
      // that the next number never overflows; a file named above that is not the store's.
      guard digits.count >= 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
        let number = UInt32(digits), number < maximumNumber
      else { return .other }
      return make(number)
    }
    return .other
  }
}
