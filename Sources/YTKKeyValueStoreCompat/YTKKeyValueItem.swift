import Foundation

/// One stored item, as YTKKeyValueStore's `getYTKKeyValueItemById:fromTable:` and
/// `getAllItemsFromTable:` gave it: the id, the value as Foundation objects, and the time of
/// its last put.
open class YTKKeyValueItem: YTKCompatObject {
  /// The id the value is stored under.
  public var itemId: String
  /// The value: an `NSMutableDictionary`, `NSMutableArray`, `NSString`, `NSNumber` or `NSNull`
  /// (containers mutable, as YTKKeyValueStore returned them).
  public var itemObject: Any
  /// The time of the last put of this id.
  public var createdTime: Date

  /// An item of `itemId` holding `itemObject`, put at `createdTime`.
  public init(itemId: String, itemObject: Any, createdTime: Date) {
    self.itemId = itemId
    self.itemObject = itemObject
    self.createdTime = createdTime
  }

  /// An empty item, as `[[YTKKeyValueItem alloc] init]` made one: no id, `NSNull`, 1970.
  public override convenience init() {
    self.init(itemId: "", itemObject: NSNull(), createdTime: Date(timeIntervalSince1970: 0))
  }

  /// `id=…, value=…, timeStamp=…`, as the original described an item.
  open override var description: String {
    "id=\(itemId), value=\(itemObject), timeStamp=\(createdTime)"
  }
}
