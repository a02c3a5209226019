/// Typed-throws versions of the standard library's `withUnsafe…` calls, which rethrow
/// untyped errors: the engine's errors stay `LogStoreError` all the way out.
///
/// They are `@inlinable` so that a caller in another module (the JSON layer, the tool) gets
/// them specialized for its types: called through the generic entry point, each call looks
/// up `Result<R, E>`'s metadata at run time, which cost more than the engine's own get.
extension Array where Element == UInt8 {
  @inlinable @inline(__always)
  package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E)
    -> R
  {
    var result: Result<R, E>?
    withUnsafeBytes { bytes in result = Result { () throws(E) -> R in try body(bytes) } }
    return try result!.get()
  }

  @inlinable @inline(__always)
  package mutating func withMutableBytes<R, E: Error>(
    _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
  ) throws(E) -> R {
    var result: Result<R, E>?
    withUnsafeMutableBytes { bytes in result = Result { () throws(E) -> R in try body(bytes) } }
    return try result!.get()
  }
}

extension String {
  /// Calls `body` with the string's UTF-8 bytes, contiguous and borrowed.
  ///
  /// A native string (small ones included, copied to the stack) lends its bytes without the
  /// copy of the string, and the reference counting, that the mutating `withUTF8` needs; only
  /// a string stored otherwise (bridged from Objective-C) is made contiguous first.
  @inlinable @inline(__always)
  package func withUTF8Bytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E)
    -> R
  {
    var result: Result<R, E>?
    let lent: Void? = utf8.withContiguousStorageIfAvailable { bytes in
      result = Result { () throws(E) -> R in try body(UnsafeRawBufferPointer(bytes)) }
    }
    if lent == nil {
      var string = self
      string.withUTF8 { bytes in
        result = Result { () throws(E) -> R in try body(UnsafeRawBufferPointer(bytes)) }
      }
    }
    return try result!.get()
  }
}

extension UnsafeRawBufferPointer {
  /// A zero-length buffer, for record fields that are empty.
  static var empty: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }
}
