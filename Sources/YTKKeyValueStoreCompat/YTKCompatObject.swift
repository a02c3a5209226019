import Foundation

// Declared for each kind of platform because Objective-C exposure exists only where there is
// an Objective-C runtime. `@objcMembers` reaches every subclass and their extensions: the
// classes of this module derive from this one and are written once.
#if canImport(ObjectiveC)
  /// The `NSObject` the classes of this module derive from. On Apple platforms it exposes
  /// their members to Objective-C under the names YTKKeyValueStore gave them.
  @objcMembers
  open class YTKCompatObject: NSObject {}
#else
  /// The `NSObject` the classes of this module derive from. On Apple platforms it exposes
  /// their members to Objective-C under the names YTKKeyValueStore gave them.
  open class YTKCompatObject: NSObject {}
#endif
