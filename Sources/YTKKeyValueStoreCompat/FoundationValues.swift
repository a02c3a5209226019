import Foundation
import YTKKeyValueStore

/// Values between Foundation's objects, which YTKKeyValueStore took and gave, and the store's
/// `JSONValue`.
enum FoundationValues {
  /// The value YTKKeyValueStore stored for `object`: what `JSONSerialization` writes of it,
  /// read back. Like the original, only a dictionary (string keys) or an array of JSON values
  /// at the top (`NSString`, `NSNumber`, `NSNull`, `NSArray`, `NSDictionary`, or their Swift
  /// counterparts), with no NaN or infinity; the original raised an exception for anything
  /// else, this refuses it with `.invalidArgument`.
  static func jsonValue(of object: Any) throws(KeyValueStoreError) -> JSONValue {
    guard JSONSerialization.isValidJSONObject(object) else {
      throw KeyValueStoreError(
        .invalidArgument,
        "\(type(of: object)) is not a dictionary or array of JSON values (NSString, NSNumber, "
          + "NSNull, NSArray, NSDictionary with string keys; no NaN or infinity)")
    }
    let text: Data
    do {
      text = try JSONSerialization.data(withJSONObject: object)
    } catch {
      throw KeyValueStoreError(
        .invalidArgument, "JSONSerialization cannot write the value: \(error)")
    }
    do {
      return try JSONReader.parse([UInt8](text))
    } catch {
      throw KeyValueStoreError(.invalidArgument, "the value's JSON cannot be stored: \(error)")
    }
  }

  /// `value` as YTKKeyValueStore returned it: containers mutable (`NSMutableDictionary`,
  /// `NSMutableArray`), strings `NSString`, numbers and booleans `NSNumber`, null `NSNull`.
  static func object(of value: JSONValue) -> Any {
    switch value {
    case .null:
      return NSNull()
    case .bool(let bool):
      return NSNumber(value: bool)
    case .int(let int):
      return NSNumber(value: int)
    case .double(let double):
      return NSNumber(value: double)
    case .string(let string):
      return NSString(string: string)
    case .array(let elements):
      let array = NSMutableArray(capacity: elements.count)
      for element in elements { array.add(object(of: element)) }
      return array
    case .object(let members):
      let dictionary = NSMutableDictionary(capacity: members.count)
      for (key, member) in members { dictionary[NSString(string: key)] = object(of: member) }
      return dictionary
    }
  }
}
