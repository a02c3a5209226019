/// The names of a store's files. A segment is `NNNNNN.log` (the number in decimal, at least
/// six digits), its hint file `NNNNNN.hint`, an index file `NNNNNN.index`, and the changes
/// file over that index file `NNNNNN.changes` (the index file's number); files being written
/// carry a `.tmp` suffix until they are complete.
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
  /// The changes file over index file `number`.
  package static func changes(_ number: UInt32) -> String {
    number.zeroPadded(width: 6) + ".changes"
  }

  /// A temporary name for file `name` that no other writer uses at once, told apart by a file
  /// number taken for it (`NNNNNN.changes.MMMMMM.tmp`): for a file that opens of other
  /// processes may be writing at the same time (a changes file at close).
  static func temporary(_ name: String, distinctBy number: UInt32) -> String {
    name + "." + number.zeroPadded(width: 6) + temporarySuffix
  }

  /// What a directory entry is, judged by its name.
  enum Kind: Equatable {
    case segment(UInt32)
    case hint(UInt32)
    case index(UInt32)
    /// A changes file, by the number of its index file.
    case changes(UInt32)
    case temporary
    case other
  }

  static func classify(_ name: String) -> Kind {
    if name.hasSuffix(temporarySuffix) { return .temporary }
    let kinds = [
      (".log", Kind.segment), (".hint", Kind.hint), (".index", Kind.index),
      (".changes", Kind.changes),
    ]
    for (suffix, make) in kinds {
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
