/// Where the current record of a key lives: segment file number, byte offset of the record
/// in that file, and the record's encoded length.
struct RecordLocation: Equatable, Hashable, Sendable {
  var segment: UInt32
  var offset: UInt32
  var length: UInt32
}
