#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One stored item: its id, its value, and when it was last put.
public struct KeyValueItem: Sendable, Hashable {
  /// The id the value is stored under.
  public let id: String
  /// The value, as stored (a string put with `put(string:)` reads back as `["s"]`, the way
  /// YTKKeyValueStore stored it).
  public let object: JSONValue
  /// The wall-clock time of the last put of this id, to the microsecond.
  public let createdTime: Date
  /// When the item expires (``KeyValueStore/put(_:id:into:expiresAfter:)``); nil: never.
  public let expiresTime: Date?

  /// An item of `id` holding `object`, put at `createdTime`, expiring at `expiresTime` (nil:
  /// never).
  public init(id: String, object: JSONValue, createdTime: Date, expiresTime: Date? = nil) {
    self.id = id
    self.object = object
    self.createdTime = createdTime
    self.expiresTime = expiresTime
  }
}
