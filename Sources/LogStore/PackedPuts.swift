/// Puts into one table, their keys and values packed one after another: a batch for bulk
/// copies (an import), written as the same batch record as a ``WriteBatch`` of the same puts,
/// without an array for each key and value and without a table name per put.
///
/// Like a ``WriteBatch``, it is written atomically, by ``LogStore/write(_:)-(PackedPuts)``.
package struct PackedPuts: Sendable {
  /// Where a put's key and value end in ``keys`` and ``values`` (each starts where the one
  /// before ends), and its timestamp (nil: the time the batch is written).
  package struct End: Sendable {
    package var key: Int
    package var value: Int
    package var timestamp: Timestamp?

    package init(key: Int, value: Int, timestamp: Timestamp?) {
      self.key = key
      self.value = value
      self.timestamp = timestamp
    }
  }

  package var table: String
  package var keys: [UInt8]
  package var values: [UInt8]
  package var ends: [End]
  /// When every put expires (microseconds since 1970); nil: never.
  package var expiry: Int64?

  /// Puts whose keys and values are packed in `keys` and `values` as `ends` says; checked
  /// when written.
  package init(
    table: String, keys: [UInt8] = [], values: [UInt8] = [], ends: [End] = [],
    expiry: Int64? = nil
  ) {
    self.expiry = expiry
    self.table = table
    self.keys = keys
    self.values = values
    self.ends = ends
  }

  package var count: Int { ends.count }

  /// Adds a put.
  package mutating func append(
    key: some Sequence<UInt8>, value: some Sequence<UInt8>, timestamp: Timestamp?
  ) {
    keys += key
    values += value
    ends.append(End(key: keys.count, value: values.count, timestamp: timestamp))
  }

  /// Calls `body` with each put's key, value and timestamp, in order. The ends must have been
  /// checked (``checkEnds()``).
  package func forEachPut(
    _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, Timestamp?) -> Void
  ) {
    keys.withUnsafeBytes { keys in
      values.withUnsafeBytes { values in
        var keyStart = 0
        var valueStart = 0
        for end in ends {
          body(
            UnsafeRawBufferPointer(rebasing: keys[keyStart..<end.key]),
            UnsafeRawBufferPointer(rebasing: values[valueStart..<end.value]), end.timestamp)
          keyStart = end.key
          valueStart = end.value
        }
      }
    }
  }

  /// Checks that the ends go forward through the whole of both arrays.
  func checkEnds() throws(LogStoreError) {
    var key = 0
    var value = 0
    for end in ends {
      guard end.key >= key, end.value >= value else {
        throw LogStoreError(.invalidArgument, "packed puts whose ends go backwards")
      }
      key = end.key
      value = end.value
    }
    guard key == keys.count, value == values.count else {
      throw LogStoreError(.invalidArgument, "packed puts whose ends do not cover their bytes")
    }
  }
}
